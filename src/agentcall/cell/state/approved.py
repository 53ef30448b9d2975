"""The approved SIP configuration this cell carries, and its digest (D-NOTE-9, D-CFG-1).

An operator (or the deploy tool) loads the SaaS's approved SIP snapshot into the cell —
``cell serve --sip-config FILE`` or ``PUT /v1/config`` — and the cell keeps it in its data
directory across restarts. ``GET /v1/info`` reports the cell's own ``cell_id`` and the
digest of the trunk/media configuration it applies; the Dispatcher admits only when both
match the snapshot it verified ("HTTP 200 is not loaded").

The digest is part of the wire contract: SHA-256 (lowercase hex) of the canonical JSON
(keys sorted, no spaces, UTF-8) of::

    {"cell_id": artifact.cell_id, "trunks": artifact.trunks,
     "trunk_details": trunk_details, "media_profiles": artifact.media_profiles}

The Dispatcher computes the same value from the snapshot it read
(``agentcall.dispatcher.saas.parse.applied_config_digest``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentcall.cell.domain.errors import InvalidRequestError

FILE_NAME = "sip-config.json"


def applied_config_digest(snapshot: Mapping[str, Any]) -> str:
    """The digest of what a cell applies from ``snapshot`` (see the module docstring)."""
    artifact = snapshot["artifact"]
    applied = {
        "cell_id": artifact["cell_id"],
        "trunks": artifact["trunks"],
        "trunk_details": snapshot["trunk_details"],
        "media_profiles": artifact["media_profiles"],
    }
    raw = json.dumps(applied, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def check_snapshot(body: object) -> dict[str, Any]:
    """The parts of an approved snapshot the cell applies must be there and well-typed."""
    if not isinstance(body, dict) or not isinstance(body.get("artifact"), dict):
        raise InvalidRequestError("send the approved SIP snapshot (an object)", field="artifact")
    artifact = body["artifact"]
    checks = (
        (artifact.get("cell_id"), str, "artifact.cell_id"),
        (artifact.get("trunks"), list, "artifact.trunks"),
        (artifact.get("media_profiles"), dict, "artifact.media_profiles"),
        (body.get("trunk_details"), list, "trunk_details"),
    )
    for value, kind, name in checks:
        if not isinstance(value, kind):
            raise InvalidRequestError(f"{name} is missing or not a {kind.__name__}", field=name)
    return body


class ApprovedConfig:
    """The loaded snapshot, persisted as ``<data-dir>/sip-config.json`` (atomic replace)."""

    def __init__(self, data_dir: Path) -> None:
        self._path = data_dir / FILE_NAME
        self.snapshot: dict[str, Any] | None = None
        self.digest: str | None = None

    def recover(self) -> None:
        if self._path.exists():
            self._apply(check_snapshot(json.loads(self._path.read_text(encoding="utf-8"))))

    def load(self, body: object) -> str:
        snapshot = check_snapshot(body)
        tmp = self._path.with_suffix(".tmp")
        tmp.write_text(json.dumps(snapshot), encoding="utf-8")
        os.replace(tmp, self._path)
        return self._apply(snapshot)

    def _apply(self, snapshot: dict[str, Any]) -> str:
        self.snapshot, self.digest = snapshot, applied_config_digest(snapshot)
        return self.digest
