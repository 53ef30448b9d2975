"""`POST /v1/schedules`: a new schedule under the request's idempotency key (the same key
and body again answers the first receipt, `deduplicated`; another body with the key is
IDEMPOTENCY_CONFLICT). Needs schedules:write and the template's queue in the token's scope.
The body is checked before anything is stored; the anchor of an interval defaults to the
database clock at creation, to the whole second."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

from agentcall.orbit.domain.idempotency import Scope, check_key
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.jsonvalue import JsonValue, dumps
from agentcall.orbit.domain.schedule_records import ScheduleRow
from agentcall.orbit.domain.schedule_request import create_digest, parse_create
from agentcall.orbit.domain.schedule_view import new_row, schedule_view
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store.schedule_ports import CREATE_OPERATION, ScheduleStore


@dataclass(frozen=True, slots=True)
class CreatedSchedule:
    """201 with the new schedule, or 200 with the first receipt of the key (`deduplicated`)."""

    status: int
    deduplicated: bool
    schedule_text: str
    schedule_id: str


async def create_schedule(
    store: ScheduleStore, principal: Principal, body: JsonValue, key: str | None
) -> CreatedSchedule:
    principal.require(Permission.SCHEDULES_WRITE)
    checked_key = check_key(key)
    draft = parse_create(body, datetime.now(UTC))
    principal.require_queue(draft.template.request.queue_id)
    scope = Scope(principal.namespace_id, CREATE_OPERATION, "", checked_key)

    def build(now: datetime) -> tuple[ScheduleRow, str]:
        row = new_row(parse_create(body, now), new_id(), principal.namespace_id, now)
        return row, dumps(schedule_view(row, None))

    created = await store.create(scope, create_digest(body), build)
    text = created.receipt.receipt_text
    schedule_id = str(json.loads(text)["id"])
    if created.deduplicated:
        return CreatedSchedule(200, True, text, schedule_id)
    return CreatedSchedule(created.receipt.status, False, text, schedule_id)
