"""Trunk choice (D-CMD-2): the first of ``allowed_trunk_ids`` that can take the call now.

A trunk qualifies when it is loaded in the approved SIP snapshot, enabled, fully known when
the snapshot is ``mode=real`` (D-CFG-1), offers the task's ``caller_profile_id``, is inside
its own schedule and has room. Once chosen it is fixed: no failover redial.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from agentcall.dispatcher.domain.model import Occupancy, SipSnapshot, TaskConfig, Trunk
from agentcall.dispatcher.domain.reasons import RejectReason
from agentcall.dispatcher.domain.schedule import is_open


@dataclass(frozen=True)
class TrunkChoice:
    trunk: Trunk
    caller_id: str


@dataclass(frozen=True)
class NoTrunk:
    reason: RejectReason
    detail: str


def _static_ok(trunk: Trunk, task: TaskConfig, sip: SipSnapshot) -> bool:
    """Loaded, enabled, usable in this mode and offering the task's caller profile."""
    if not trunk.enabled:
        return False
    if sip.mode == "real" and not trunk.fully_known:
        return False
    return task.caller_profile_id in trunk.caller_ids


def usable_trunks(task: TaskConfig, sip: SipSnapshot) -> list[Trunk]:
    """Allowed trunks in priority order that pass the static checks."""
    found = (sip.trunks.get(trunk_id) for trunk_id in task.allowed_trunk_ids)
    return [trunk for trunk in found if trunk is not None and _static_ok(trunk, task, sip)]


def _has_room(trunk: Trunk, occupancy: Occupancy) -> bool:
    limit = trunk.max_concurrent_calls
    return limit is None or occupancy.on_trunk(trunk.trunk_id) < limit


def choose_trunk(
    task: TaskConfig, sip: SipSnapshot, occupancy: Occupancy, now: datetime
) -> TrunkChoice | NoTrunk:
    saw_usable = False
    saw_open = False
    for trunk in usable_trunks(task, sip):
        saw_usable = True
        if not is_open(trunk.schedule, now):
            continue
        saw_open = True
        if _has_room(trunk, occupancy):
            return TrunkChoice(trunk, trunk.caller_ids[task.caller_profile_id])
    if saw_usable and not saw_open:
        return NoTrunk(RejectReason.OUTSIDE_SCHEDULE, "no usable trunk is inside its schedule")
    if saw_usable:
        return NoTrunk(RejectReason.NO_TRUNK_AVAILABLE, "every usable trunk is at its limit")
    return NoTrunk(RejectReason.NO_TRUNK_AVAILABLE, "no allowed trunk is loaded and usable")
