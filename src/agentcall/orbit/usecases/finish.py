"""A worker's `result` and `evidence` (worker-protocol.md §3.4): the attempt ends and its task
moves as `agentcall.orbit.domain.attempts.decide_end` says, batched with the other results of the
moment (`agentcall.orbit.execution.kernel.FINISH`); evidence is recorded on the running attempt."""

from __future__ import annotations

from functools import partial

from agentcall.orbit.execution import steps
from agentcall.orbit.execution.acks import Ack, Peer
from agentcall.orbit.execution.hub import Hub
from agentcall.orbit.execution.kernel import FINISH
from agentcall.orbit.protocol.messages import Evidence, Result
from agentcall.orbit.telemetry import spans


async def finish(hub: Hub, peer: Peer, result: Result) -> Ack:
    """The ack of the result (`ended` names the attempt, `wake` a queue with work again)."""
    ack = await hub.batcher.submit(FINISH, (peer, result))
    spans.finished(result.ref.attempt_id, result.outcome.value, ack.ok)
    return ack


async def record_evidence(hub: Hub, peer: Peer, message: Evidence) -> Ack:
    """The ack of an evidence message (how many items were new)."""
    step = partial(steps.call_evidence, hub.kernel.evidence, peer, message)
    return await hub.batcher.run(partial(steps.guard, step, message.ref.attempt_id))
