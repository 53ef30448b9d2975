"""``cell serve --mode sip``: each call of the cell is a real SIP call to its trunk.

The same :class:`agentcall.cell.calls.driver.CallDriver` seam as the simulated mode: the cell
gives a :class:`~agentcall.cell.calls.driver.CallControl`, the driver reports ringing, answered,
transcript turns, opt-out and exactly one ``ended``, and writes the recording
through ``open_recording()``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from agentcall.cell.agent.optout import OptOutDetector
from agentcall.cell.agent.providers import ProviderRegistry
from agentcall.cell.audio.vad import make_vad
from agentcall.cell.calls.driver import CallControl
from agentcall.cell.calls.record import Ending
from agentcall.cell.domain.errors import SipError
from agentcall.cell.domain.model import EndCause, Outcome, ReasonCode
from agentcall.cell.media import stages
from agentcall.cell.media.hearing import VoiceOptions, amd_for_call
from agentcall.cell.media.quality import call_quality
from agentcall.cell.media.session import MediaClock
from agentcall.cell.media.voice import AgentSink, VoiceAgent
from agentcall.cell.sip.digest import Credentials
from agentcall.cell.sip.outcome import CallEnd
from agentcall.cell.sip.transport import SipEndpoint
from agentcall.cell.sip.trunk import resolve_target
from agentcall.cell.sip.ua import CallReport, SipCall, SipCallPlan, SipTimers

log = logging.getLogger("cell.sip")

_UNANSWERED_CAUSE = {
    "busy": EndCause.CALLEE,
    "rejected": EndCause.CALLEE,
    "no_answer": EndCause.LIMIT,
    "hangup_requested": EndCause.DISPATCHER,
    "failed": EndCause.NETWORK,
}
_ANSWERED = {
    "remote_hangup": (None, EndCause.CALLEE),
    "max_duration": (ReasonCode.MAX_DURATION.value, EndCause.LIMIT),
    "rtp_timeout": ("rtp_timeout", EndCause.NETWORK),
    "media_failed": ("media_failed", EndCause.NETWORK),
}


def ending_for(
    end: CallEnd, report_ring_ms: int, talk_ms: int, agent_reason: str | None, hangup_reason: str
) -> Ending:
    """The cell's Ending of a SIP call (pure)."""
    outcome = end.outcome
    if end.outcome is not Outcome.ANSWERED:
        cause = _UNANSWERED_CAUSE.get(end.cause, EndCause.NETWORK)
        reason = hangup_reason if end.cause == "hangup_requested" else end.reason_code
        return Ending(outcome, reason, cause, report_ring_ms, 0)
    if end.cause == "agent_ended":
        reason, cause = agent_reason, EndCause.AGENT
    elif end.cause == "hangup_requested":
        reason = hangup_reason
        cause = EndCause.DISPATCHER if hangup_reason == "hangup_requested" else EndCause.CELL
    else:
        reason, cause = _ANSWERED.get(end.cause, (end.cause, EndCause.NETWORK))
    return Ending(outcome, reason, cause, report_ring_ms, talk_ms)


class _Observer:
    def __init__(self, call: CallControl, agent: VoiceAgent, loop_time: float) -> None:
        self.call, self.agent, self.started = call, agent, loop_time
        self.ring_ms = 0

    def ringing(self) -> None:
        self.call.ringing()

    def answered(self) -> None:
        self.ring_ms = int((asyncio.get_running_loop().time() - self.started) * 1000)
        self.call.answered()
        self.agent.start()


def quality_of(report: CallReport, agent: VoiceAgent) -> dict[str, Any] | None:
    """The call record's ``quality`` summary of an answered call (None otherwise)."""
    if not report.answered:
        return None
    amd = None
    if agent.hearing.detecting_machines:
        verdict = agent.hearing.amd
        amd = {"verdict": verdict.verdict.value, "why": verdict.why, "action": agent.options.amd}
    latencies = [t.reply_ms for t in agent.reply_timings if t.reply_ms is not None]
    return call_quality(
        report.media,
        latencies,
        vad=agent.vad.name,
        amd=amd,
        dtmf=agent.digits,
        voice_stages_ms=stages.replies_stage_ms(agent.reply_timings),
        greeting_ms=stages.greeting_ms(agent.speaker.greeting),
        preemptive=agent.preempter.counts(),
    )


class SipDriver:
    mode = "sip"

    def __init__(
        self,
        providers: ProviderRegistry,
        credentials: Mapping[str, Credentials],
        *,
        bind_host: str = "127.0.0.1",
        advertised_host: str | None = None,
        rtp_timeout_ms: int = 10_000,
        timers: SipTimers | None = None,
        voice: VoiceOptions | None = None,
        vad: str = "webrtc",
    ) -> None:
        self.voice = voice or VoiceOptions()
        self.vad = vad
        self.providers = providers
        self.credentials = credentials
        self.bind_host = bind_host
        self.advertised_host = advertised_host
        self.rtp_timeout_ms = rtp_timeout_ms
        self.timers = timers
        self.clock = MediaClock()
        self._endpoints: dict[str, SipEndpoint] = {}

    async def _endpoint(self, transport: str) -> SipEndpoint:
        if transport not in self._endpoints:
            endpoint = SipEndpoint(transport, self.bind_host, 0, self.advertised_host)
            await endpoint.start()
            self._endpoints[transport] = endpoint
        return self._endpoints[transport]

    async def run(self, call: CallControl) -> None:
        plan = call.plan
        try:
            target = resolve_target(plan.trunk, self.credentials)
            endpoint = await self._endpoint(target.transport)
        except SipError as exc:
            log.warning("call %s not placed: %s", plan.call_id, exc)
            call.ended(Ending(Outcome.FAILED, exc.reason_code, EndCause.NETWORK, 0, 0))
            return
        sip_call: SipCall | None = None

        def finish(reason: str) -> None:
            if sip_call is not None:
                sip_call.agent_done()

        def interim(text: str, utterance_start_ms: int) -> None:
            # Interim hypotheses stay inside the cell (D-RES-1: call.result carries final
            # turns only); they drive barge-in and are visible here for troubleshooting.
            log.debug(
                "call %s interim hypothesis at %d ms: %d characters",
                plan.call_id,
                utterance_start_ms,
                len(text),
            )

        sink = AgentSink(
            transcript=call.transcript, opt_out=call.opt_out, finish=finish, interim=interim
        )
        opening = plan.agent.conversation.opening
        voice = replace(self.voice, amd=amd_for_call(plan.amd, self.voice.amd, opening))
        agent = VoiceAgent(
            plan.agent, self.providers, sink, OptOutDetector(), voice, make_vad(self.vad)
        )
        sip_plan = SipCallPlan(
            call_id=plan.call_id,
            caller_id=plan.caller_id,
            callee=plan.callee,
            dial_prefix=plan.trunk.dial_prefix,
            server_host=target.host,
            server_port=target.port,
            ring_timeout_ms=plan.ring_timeout_ms,
            max_duration_ms=plan.max_duration_ms,
            credentials=target.credentials,
            payload_type=target.payload_type,
            rtp_timeout_ms=self.rtp_timeout_ms,
        )
        observer = _Observer(call, agent, asyncio.get_running_loop().time())
        sip_call = SipCall(
            sip_plan,
            endpoint,
            self.clock,
            agent,
            observer,
            timers=self.timers,
            open_recording=call.open_recording,
        )
        report = await self._run_until_hangup(call, sip_call)
        await agent.aclose()
        call.ended(self._ending(report, observer, agent, call))

    @staticmethod
    async def _run_until_hangup(call: CallControl, sip_call: SipCall) -> CallReport:
        async def watch() -> None:
            await call.hangup_requested.wait()
            sip_call.hangup()

        watcher = asyncio.get_running_loop().create_task(watch())
        try:
            return await sip_call.run()
        finally:
            watcher.cancel()

    @staticmethod
    def _ending(report: CallReport, obs: _Observer, agent: VoiceAgent, call: CallControl) -> Ending:
        elapsed = int((asyncio.get_running_loop().time() - obs.started) * 1000)
        ring_ms = obs.ring_ms if report.answered else elapsed
        ending = ending_for(
            report.end, ring_ms, report.talk_ms, agent.finished, call.hangup_reason.value
        )
        return replace(ending, quality=quality_of(report, agent))

    async def aclose(self) -> None:
        await self.clock.stop()
        for endpoint in self._endpoints.values():
            await endpoint.close()
