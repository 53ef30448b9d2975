"""Command line entry point of the Dispatcher (filled in by its issue)."""

from __future__ import annotations


def main() -> None:
    raise SystemExit("mocksaas: not built yet")
