"""The simulated driver: plays the script's behaviour for each callee in scaled time.

Set-up (ringing, answer or not) comes from ``agentcall.cell.sim.ringing``; an answered call
runs the task's agent with the cell's providers (``mock``) through the conversation
planner, then plays it back: transcript turns are reported as each one ends, the
recording is written as time passes (so a killed cell leaves a partial WAV), and a
hang-up request cuts the conversation where it stands.
"""

from __future__ import annotations

from agentcall.cell.agent.conversation import (
    ConversationPlan,
    EndReason,
    plan_conversation,
    render_pcm,
)
from agentcall.cell.agent.optout import OptOutDetector
from agentcall.cell.agent.providers import ProviderRegistry
from agentcall.cell.calls.driver import CallControl
from agentcall.cell.calls.record import Ending
from agentcall.cell.domain.model import EndCause, Outcome, ReasonCode
from agentcall.cell.recording.wav import WavWriter
from agentcall.cell.sim.clock import SimClock
from agentcall.cell.sim.ringing import setup
from agentcall.cell.sim.script import Script

AUDIO_STEP_MS = 2000  # the recording on disk lags the call by at most this much

END_REASONS: dict[EndReason, tuple[str | None, EndCause]] = {
    EndReason.CALLEE_HANGUP: (None, EndCause.CALLEE),
    EndReason.MAX_DURATION: (ReasonCode.MAX_DURATION.value, EndCause.LIMIT),
    EndReason.MAX_TURNS: (ReasonCode.MAX_TURNS.value, EndCause.AGENT),
    EndReason.SILENCE_TIMEOUT: (ReasonCode.SILENCE_TIMEOUT.value, EndCause.AGENT),
    EndReason.OPT_OUT: (ReasonCode.OPT_OUT.value, EndCause.AGENT),
    EndReason.HANGUP_REQUESTED: (ReasonCode.HANGUP_REQUESTED.value, EndCause.DISPATCHER),
}


def hangup_cause(reason: ReasonCode) -> EndCause:
    return EndCause.DISPATCHER if reason is ReasonCode.HANGUP_REQUESTED else EndCause.CELL


def steps(plan: ConversationPlan) -> list[int]:
    """Moments (ms) at which playback reports something or writes audio."""
    moments = {t.end_ms for t in plan.turns} | set(range(AUDIO_STEP_MS, plan.end_ms, AUDIO_STEP_MS))
    if plan.opt_out_at_ms is not None:
        moments.add(plan.opt_out_at_ms)
    moments.add(plan.end_ms)
    return sorted(m for m in moments if m <= plan.end_ms)


class _Playback:
    def __init__(self, call: CallControl, plan: ConversationPlan, writer: WavWriter | None):
        self.call = call
        self.plan = plan
        self.writer = writer
        self.written_ms = 0
        self.turns_sent = 0
        self.opt_out_sent = False

    def advance(self, to_ms: int) -> None:
        if self.writer is not None and to_ms > self.written_ms:
            self.writer.append(render_pcm(self.plan, self.written_ms, to_ms))
            self.written_ms = to_ms
        turns = self.plan.turns
        while self.turns_sent < len(turns) and turns[self.turns_sent].end_ms <= to_ms:
            self.call.transcript(turns[self.turns_sent])
            self.turns_sent += 1
        at = self.plan.opt_out_at_ms
        if at is not None and at <= to_ms and not self.opt_out_sent:
            self.call.opt_out(self.plan.opt_out_phrase, at)
            self.opt_out_sent = True

    def cut(self, at_ms: int) -> None:
        self.plan = self.plan.cut(at_ms, EndReason.HANGUP_REQUESTED)
        self.advance(self.plan.end_ms)


class SimDriver:
    mode = "sim"

    def __init__(self, script: Script, providers: ProviderRegistry, time_scale: float) -> None:
        self.script = script
        self.providers = providers
        self.time_scale = time_scale
        self.detector = OptOutDetector.of(script.opt_out_phrases)

    async def run(self, call: CallControl) -> None:
        _, behaviour = self.script.behaviour_for(call.plan.callee)
        clock = SimClock(self.time_scale)
        result = setup(behaviour, call.plan.ring_timeout_ms)
        if result.rings:
            call.ringing()
        if await clock.sleep_until(result.at_ms, call.hangup_requested):
            reason = call.hangup_reason
            ring_ms = min(clock.now_ms(), result.at_ms)
            call.ended(Ending(Outcome.NO_ANSWER, reason.value, hangup_cause(reason), ring_ms, 0))
            return
        if not result.answered:
            call.ended(Ending(result.outcome, result.reason_code, result.cause, result.at_ms, 0))
            return
        call.answered()
        plan = await plan_conversation(
            call.plan.agent,
            self.providers,
            behaviour.turns,
            talk_ms=behaviour.talk_ms,
            max_duration_ms=call.plan.max_duration_ms,
            detector=self.detector,
        )
        writer = call.open_recording() if behaviour.recording else None
        await self._talk(call, _Playback(call, plan, writer), result.at_ms)

    async def _talk(self, call: CallControl, playback: _Playback, ring_ms: int) -> None:
        clock = SimClock(self.time_scale)
        for at in steps(playback.plan):
            if await clock.sleep_until(at, call.hangup_requested):
                playback.cut(min(clock.now_ms(), playback.plan.end_ms))
                reason = call.hangup_reason
                ending = Ending(
                    Outcome.ANSWERED,
                    reason.value,
                    hangup_cause(reason),
                    ring_ms,
                    playback.plan.end_ms,
                )
                call.ended(ending)
                return
            playback.advance(at)
        code, cause = END_REASONS[playback.plan.end_reason]
        call.ended(Ending(Outcome.ANSWERED, code, cause, ring_ms, playback.plan.end_ms))

    async def aclose(self) -> None:
        return None
