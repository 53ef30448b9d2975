"""A worker hands an attempt back (`release`, worker-protocol.md §3.6): at shutdown or for a
handler it cannot run; the task is requeued, or ends as its recovery safety and attempt budget
say (`agentcall.orbit.domain.attempts.decide_end`)."""

from __future__ import annotations

from functools import partial

from agentcall.orbit.execution import steps
from agentcall.orbit.execution.acks import Ack, Peer
from agentcall.orbit.execution.hub import Hub
from agentcall.orbit.protocol.messages import Release


async def requeue(hub: Hub, peer: Peer, message: Release) -> Ack:
    """The ack of the release (`wake` names the queue when the task waits again)."""
    step = partial(steps.call, hub.kernel.release, peer, message)
    return await hub.batcher.run(partial(steps.guard, step, message.ref.attempt_id))
