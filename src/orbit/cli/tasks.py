"""`orbit tasks ...` (filled in with the SDK)."""

from __future__ import annotations

import click


@click.group()
def tasks() -> None:
    """Submit, read, list and cancel tasks through the API (ORBIT_URL, ORBIT_TOKEN)."""
