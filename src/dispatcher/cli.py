"""Command line entry point of the Dispatcher (filled in by the dispatcher core)."""

from __future__ import annotations


def main() -> None:
    raise SystemExit("dispatcher: not built yet")
