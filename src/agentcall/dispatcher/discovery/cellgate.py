"""The cell-identity part of the admission gate (D-NOTE-9, D-CFG-1).

Closed (``cell_identity``) until the cell the D drives reports the ``cell_id`` and the
configuration digest of the verified SIP snapshot; checked again every ``interval_s`` (the
config TTL) and whenever asked, so a cell restarted with another configuration, or a new
snapshot the cell does not carry yet, closes admission with the reason in ``/status``, a
log line and ``dispatcher_cell_identity_mismatch``. A cell that cannot be asked keeps the
last verdict (no calls can be placed through it anyway).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from agentcall.dispatcher.discovery.gate import Gate
from agentcall.dispatcher.domain.identity import CellIdentity, identity_problem
from agentcall.dispatcher.domain.model import SipSnapshot
from agentcall.dispatcher.logs import log

LOG = logging.getLogger("dispatcher.cell_identity")
NAME = "cell_identity"


@dataclass(frozen=True)
class CellGateStatus:
    verified: bool
    expected_cell_id: str | None
    expected_config_sha256: str | None
    reported_cell_id: str | None
    reported_config_sha256: str | None
    problem: str | None
    mismatches: int
    checked_at: datetime | None


class CellGate:
    def __init__(
        self,
        gate: Gate,
        *,
        sip: Callable[[], Awaitable[SipSnapshot | None]],
        identity: Callable[[], Awaitable[CellIdentity | None]],
        interval_s: float,
        clock: Callable[[], datetime],
    ) -> None:
        self._gate = gate
        self._sip = sip
        self._identity = identity
        self._interval = interval_s
        self._clock = clock
        self._expected: SipSnapshot | None = None
        self._reported: CellIdentity | None = None
        self._problem: str | None = "not checked yet"
        self._checked_at: datetime | None = None
        self.mismatches = 0
        gate.close(NAME, "the cell has not been checked against the SIP snapshot yet")

    async def run(self) -> None:
        while True:
            await self.check()
            await asyncio.sleep(self._interval)

    async def check(self) -> None:
        snapshot = await self._sip()
        if snapshot is None:
            return  # no verified snapshot: the SIP part of the gate is closed already
        reported = await self._identity()
        if reported is None:
            return  # the cell cannot be asked now: the last verdict stands
        self._expected, self._reported, self._checked_at = snapshot, reported, self._clock()
        problem = identity_problem(snapshot.cell_id, snapshot.config_sha256, reported)
        if problem is None:
            if self._problem is not None:
                log(LOG, logging.INFO, "cell_identity.verified", cell_id=reported.cell_id)
            self._gate.lift(NAME, self._clock())
        else:
            if problem != self._problem:
                self.mismatches += 1
                log(LOG, logging.ERROR, "cell_identity.mismatch", problem=problem)
            self._gate.close(NAME, problem)
        self._problem = problem

    def status(self) -> CellGateStatus:
        expected, reported = self._expected, self._reported
        return CellGateStatus(
            verified=self._problem is None,
            expected_cell_id=expected.cell_id if expected else None,
            expected_config_sha256=expected.config_sha256 if expected else None,
            reported_cell_id=reported.cell_id if reported else None,
            reported_config_sha256=reported.config_sha256 if reported else None,
            problem=self._problem,
            mismatches=self.mismatches,
            checked_at=self._checked_at,
        )
