"""Submit (O-SUB-1, O-SUB-4): one task, by group commit (`agentcall.orbit.store.submit_group`:
submits arriving together share one transaction) or alone in its own transaction.

The idempotency record goes in first: a concurrent request with the same key then waits on
that key and fails with a duplicate, after which it replays the winner's receipt (or gets
IDEMPOTENCY_CONFLICT). Validation failures roll everything back and store nothing
(O-NOTE-6)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from agentcall.orbit.domain.audit import current_source
from agentcall.orbit.domain.canonical import Digest
from agentcall.orbit.domain.errors import OrbitError
from agentcall.orbit.domain.idempotency import Scope
from agentcall.orbit.domain.submit import OPERATION as SUBMIT
from agentcall.orbit.domain.submit import SubmitRequest, submit_digest
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.group_plan import PendingSubmit
from agentcall.orbit.store.receipts import Receipt
from agentcall.orbit.store.submit_group import DEFAULT_LANES, Handoff, SubmitGroups
from agentcall.orbit.store.submits import submit_alone


class Submits:
    """`group_commit`: submits share transactions (`agentcall.orbit.store.submit_group`); otherwise
    each submit is its own transaction; `submit_lanes` groups commit at once (MySQL/MariaDB).
    `on_accepted(queue_id)` is called once a submit committed a new task that was not leased
    in its own transaction (the engine's dispatcher wakes for that queue); `handoff` leases
    accepted tasks inside a submit group's transaction (eager dispatch)."""

    def __init__(
        self,
        db: Database,
        *,
        group_commit: bool = True,
        submit_lanes: int = DEFAULT_LANES,
        on_accepted: Callable[[str], None] | None = None,
        handoff: Handoff | None = None,
    ) -> None:
        self.db = db
        self._alone = partial(submit_alone, db)
        self.on_accepted = on_accepted or _ignore
        self.groups = (
            SubmitGroups(
                db,
                self._alone,
                submit_lanes,
                handoff=handoff,
                on_accepted=self.on_accepted,
            )
            if group_commit
            else None
        )

    async def submit(
        self, principal: Principal, request: SubmitRequest, key: str, request_id: str
    ) -> Receipt:
        """201 once committed, or the replay (200) of the key's first receipt (O-SUB-1)."""
        principal.require(Permission.SUBMIT)
        principal.require_queue(request.queue_id)
        scope = Scope(principal.namespace_id, SUBMIT, "", key)
        digest, source = submit_digest(request), current_source()
        item = PendingSubmit(principal, request, scope, digest, request_id, source)
        if self.groups is not None:  # the group tells `on_accepted` right after its commit
            return await self.groups.submit(item)
        return await self._alone_told(item)

    async def submit_all(
        self, submits: Sequence[tuple[Principal, SubmitRequest, str, str]]
    ) -> list[Receipt | BaseException]:
        """Several submits (principal, request, key, request ID) that come together (a
        schedule runner's due slots), each checked and answered as `submit` would, written
        together (`SubmitGroups.submit_all`); a refused or failed one as its exception."""
        items: list[PendingSubmit] = []
        answers: list[Receipt | BaseException | None] = []
        source = current_source()
        digests: dict[int, Digest] = {}  # by request: the slots of a schedule share theirs
        for principal, request, key, request_id in submits:
            try:
                principal.require(Permission.SUBMIT)
                principal.require_queue(request.queue_id)
            except OrbitError as exc:
                answers.append(exc)
                continue
            scope = Scope(principal.namespace_id, SUBMIT, "", key)
            digest = digests.get(id(request))
            if digest is None:
                digest = digests[id(request)] = submit_digest(request)
            items.append(PendingSubmit(principal, request, scope, digest, request_id, source))
            answers.append(None)
        if self.groups is not None:
            written = await self.groups.submit_all(items)
        else:  # each its own transaction, in order
            written = []
            for item in items:
                try:
                    written.append(await self._alone_told(item))
                except Exception as exc:  # noqa: BLE001 - answered as the item's outcome
                    written.append(exc)
        done = iter(written)
        return [next(done) if answer is None else answer for answer in answers]

    async def _alone_told(self, item: PendingSubmit) -> Receipt:
        receipt = await self._alone(item)
        if receipt.status == 201 and not receipt.leased:
            self.on_accepted(item.request.queue_id)
        return receipt


def _ignore(queue_id: str) -> None:
    """No dispatcher in this process (the CLI, tests of the API alone)."""
