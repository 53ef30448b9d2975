"""Is a pinned trunk usable for a real call, and with which credentials (pure)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agentcall.cell.calls.plan import TrunkSpec
from agentcall.cell.domain.errors import SipConfigError
from agentcall.cell.sip.digest import Credentials

TRANSPORTS = frozenset({"udp", "tcp"})
AUTH_NONE = frozenset({"none", "ip"})
AUTH_DIGEST = frozenset({"digest"})


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    transport: str
    payload_type: int
    credentials: Credentials | None


def _payload_type(media: Mapping[str, object] | None) -> int:
    if media is None:
        return 8
    fmt = str(media.get("format", "alaw")).lower()
    rate = media.get("sample_rate_hz", 8000)
    if fmt not in ("alaw", "pcma") or rate != 8000 or media.get("channels", 1) != 1:
        raise SipConfigError("media_profile must be PCMA (alaw) 8000 Hz mono")
    pt = media.get("payload_type", 8)
    if not isinstance(pt, int) or not 0 <= pt <= 127:
        raise SipConfigError("media_profile.payload_type must be 0..127")
    return pt


def resolve_target(trunk: TrunkSpec, credentials: Mapping[str, Credentials]) -> Target:
    """Raise SipConfigError naming the missing field: null means unknown (D-CFG-1)."""
    if not trunk.server_host or trunk.server_port is None:
        raise SipConfigError(f"trunk {trunk.trunk_id}: server_host/server_port unknown")
    transport = (trunk.transport or "").lower()
    if transport not in TRANSPORTS:
        raise SipConfigError(f"trunk {trunk.trunk_id}: transport {trunk.transport!r} not usable")
    auth = (trunk.auth_mode or "").lower()
    if auth not in AUTH_NONE | AUTH_DIGEST:
        raise SipConfigError(f"trunk {trunk.trunk_id}: auth_mode {trunk.auth_mode!r} not usable")
    if trunk.registration_required:
        raise SipConfigError(f"trunk {trunk.trunk_id}: registration is not supported by this cell")
    creds = credentials.get(trunk.trunk_id)
    if auth in AUTH_DIGEST and creds is None:
        raise SipConfigError(f"trunk {trunk.trunk_id}: auth_mode digest but no credentials")
    return Target(
        host=trunk.server_host,
        port=trunk.server_port,
        transport=transport,
        payload_type=_payload_type(trunk.media_profile),
        credentials=creds if auth in AUTH_DIGEST else None,
    )


def load_credentials(path: Path | None) -> dict[str, Credentials]:
    """``{"<trunk_id>": {"username": "...", "password": "..."}}``; the file is a secret."""
    if path is None:
        return {}
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SipConfigError(f"--sip-credentials {path}: unreadable JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise SipConfigError("--sip-credentials must hold a JSON object keyed by trunk_id")
    out: dict[str, Credentials] = {}
    for trunk_id, entry in raw.items():
        if not isinstance(entry, dict) or not all(
            isinstance(entry.get(k), str) for k in ("username", "password")
        ):
            raise SipConfigError(f"--sip-credentials: {trunk_id} needs username and password")
        out[trunk_id] = Credentials(entry["username"], entry["password"])
    return out
