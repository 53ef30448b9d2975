"""Lease upkeep steps, each inside the caller's transaction: heartbeats (and re-binding held
attempts on `hello`), the disconnect grace, and the sweeper pass over expired leases, attempt
deadlines and WAITING tasks past their deadlines (worker-protocol.md §3.5, §6)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from agentcall.orbit.domain.attempts import AttemptEnd, AttemptState, EndCause, decide_end
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.lease_tokens import token_is_current
from agentcall.orbit.domain.leasing import expiry_cause, extend_lease
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.times import format_time, milliseconds
from agentcall.orbit.domain.transitions import EndWrite
from agentcall.orbit.execution.acks import Peer
from agentcall.orbit.execution.kernel import Bind, KernelSettings
from agentcall.orbit.execution.waiting import expire_waiting
from agentcall.orbit.protocol.messages import AttemptRef
from agentcall.orbit.store.connector import HotConnection
from agentcall.orbit.store.ports import HeartbeatRow
from agentcall.orbit.store.transactions import SqlAttempts

_CANCEL_REASON = {EndCause.ATTEMPT_TIMEOUT: "attempt_timeout", EndCause.LEASE_EXPIRED: "lease_lost"}


@dataclass(slots=True)
class SweepReport:
    cancels: list[tuple[str, str, str]] = field(default_factory=list)  # (conn, attempt, why)
    wake: set[str] = field(default_factory=set)
    ended: int = 0


class Upkeep:
    def __init__(self, settings: KernelSettings, bind: Bind = SqlAttempts) -> None:
        self.settings = settings
        self.bind = bind

    async def heartbeat(
        self,
        conn: HotConnection,
        now: datetime,
        peer: Peer,
        refs: Sequence[AttemptRef],
        *,
        rebind: bool = False,
    ) -> list[dict[str, JsonValue]]:
        """Renew current leases; `rebind` also moves them to this connection (hello)."""
        tx = self.bind(conn)
        found = await tx.heartbeat_rows([ref.attempt_id for ref in refs])
        rows = {row.id: row for row in found}
        statuses: list[dict[str, JsonValue]] = []
        updates: list[str] = []
        for ref in refs:
            row = rows.get(ref.attempt_id)
            if row is None or not _current(row, ref, peer, now):
                statuses.append({"attempt_id": ref.attempt_id, "status": "lost"})
                continue
            expires = extend_lease(now, self.settings.lease_ttl_ms, row.attempt_deadline_at)
            updates.append(ref.attempt_id)
            status = "cancel_requested" if row.cancel_requested else "ok"
            statuses.append(
                {
                    "attempt_id": ref.attempt_id,
                    "status": status,
                    "lease_expires_at": format_time(expires),
                }
            )
        if updates:
            renewed = now + milliseconds(self.settings.lease_ttl_ms)
            await tx.renew_leases(updates, now, renewed, peer.connection_id if rebind else None)
        return statuses

    async def disconnect(self, conn: HotConnection, now: datetime, connection_id: str) -> None:
        cut = now + milliseconds(self.settings.reconnect_grace_ms)
        await self.bind(conn).shorten_leases(connection_id, cut)

    # ------------------------------------------------------------------ sweeper
    async def sweep(
        self, conn: HotConnection, now: datetime, limit: int, *, waiting: bool = True
    ) -> SweepReport:
        """Expired leases and attempt deadlines; with `waiting`, also WAITING tasks past a
        deadline (a coarser scan: the hub runs it about once a second)."""
        report = SweepReport()
        tx = self.bind(conn)
        for live in await tx.expired_attempts(now, limit):
            cause = expiry_cause(now, live.lease_expires_at, live.attempt_deadline_at)
            cause = cause or EndCause.LEASE_EXPIRED
            end = AttemptEnd(cause, started=live.state is AttemptState.RUNNING)
            outcome = decide_end(live.facts, end, now, self.settings.backoff)
            await tx.write_ends(now, [EndWrite(live, outcome)])
            report.cancels.append((live.connection_id, live.id, _CANCEL_REASON[cause]))
            if outcome.task_state is TaskState.WAITING:
                report.wake.add(live.queue_id)
            report.ended += 1
        if waiting:
            report.ended += await expire_waiting(tx, now, limit)
        return report


def _current(row: HeartbeatRow, ref: AttemptRef, peer: Peer, now: datetime) -> bool:
    return bool(
        row.namespace_id == peer.namespace_id
        and row.queue_id in peer.queues
        and row.state.live
        and row.lease_expires_at > now
        and token_is_current(ref.lease_token, row.token_sha256)
    )
