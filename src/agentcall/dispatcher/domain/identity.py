"""Does the cell carry the approved snapshot? (D-NOTE-9, D-CFG-1) Pure.

"Don't treat HTTP 200 as loaded": before admitting on a SIP snapshot the D compares what
the cell it drives reports — its ``cell_id`` and the digest of the trunk/media
configuration it applies — with the snapshot's ``artifact.cell_id`` and the D's own digest
of the approved trunks. Any difference, or a cell that reports nothing, closes admission
with a visible reason; there is no fallback.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CellIdentity:
    """What the cell reports about itself (``GET /v1/info``); None: it does not say."""

    cell_id: str | None
    config_sha256: str | None


def identity_problem(
    expected_cell_id: str, expected_sha256: str, reported: CellIdentity
) -> str | None:
    """Why the cell does not carry the approved snapshot, or None when it does."""
    if reported.cell_id != expected_cell_id:
        return (
            f"cell reports cell_id {reported.cell_id!r}; the snapshot is for {expected_cell_id!r}"
        )
    if reported.config_sha256 != expected_sha256:
        return (
            f"cell applies configuration {reported.config_sha256 or 'none'}; the approved"
            f" snapshot's is {expected_sha256}"
        )
    return None
