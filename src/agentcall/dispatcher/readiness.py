"""Readiness of a D, decided from its status snapshot alone (pure).

A D is ready when it can take new calls: the broker is reachable, it holds a SIP snapshot
verified against the cell it drives (D-NOTE-2, D-NOTE-9), discovery has caught up since
start or since its last error (D-DISC-6, D-DISC-9), the cell answers and its state file is
still the one it opened. Each condition
that fails is one cause ``{"cause", "detail"}``; ``GET /readyz`` answers 503 with them,
and ``/status`` carries the same verdict as ``readiness``. Liveness is another matter
(``GET /healthz``): a D that is not ready is still running and recovers on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Snapshot = Mapping[str, Any]
Check = Callable[[Snapshot], str | None]

BROKER = "broker_unreachable"
SIP = "sip_snapshot_unverified"
DISCOVERY = "discovery_not_caught_up"
CELL = "cell_unreachable"
STATE = "state_file_lost"

SIP_GATES = ("sip", "saas.sip", "cell_identity")  # admission gate parts about the snapshot


def _last_error(s: Snapshot, source: str) -> str | None:
    """The first error ``last_errors`` lists for `source`, if any."""
    return next((e["error"] for e in s["last_errors"] if e["source"] == source), None)


def _broker(s: Snapshot) -> str | None:
    if s["amqp"]["connected"]:
        return None
    error = _last_error(s, "amqp")
    return f"no AMQP connection: {error}" if error else "no AMQP connection"


def _sip(s: Snapshot) -> str | None:
    closed = s["admission"]["why_closed"]
    reasons = [f"{part}: {closed[part]}" for part in SIP_GATES if part in closed]
    return "; ".join(reasons) or None


def _discovery(s: Snapshot) -> str | None:
    disc = s["discovery"]
    if disc["caught_up"]:
        return None
    return disc["last_error"] or "no empty discovery page read since start"


def _cell(s: Snapshot) -> str | None:
    calls = s["calls"]
    if calls.get("cell_reachable"):
        return None
    error = _last_error(s, "cell")
    return f"the cell does not answer: {error}" if error else "the cell has not answered yet"


def _state_file(s: Snapshot) -> str | None:
    """The state file was deleted, renamed or replaced under the D: it takes nothing more
    and stops (docs/dispatcher.md, the state file)."""
    state = s.get("state_file") or {}
    return None if state.get("intact", True) else str(state.get("problem"))


CHECKS: tuple[tuple[str, Check], ...] = (
    (BROKER, _broker),
    (SIP, _sip),
    (DISCOVERY, _discovery),
    (CELL, _cell),
    (STATE, _state_file),
)


def readiness(s: Snapshot) -> dict[str, Any]:
    """``{"ready": bool, "causes": [{"cause", "detail"}, ...]}`` in the order of CHECKS."""
    causes = []
    for cause, check in CHECKS:
        detail = check(s)
        if detail is not None:
            causes.append({"cause": cause, "detail": detail})
    return {"ready": not causes, "causes": causes}
