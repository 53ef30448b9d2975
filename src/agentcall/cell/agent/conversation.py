"""The conversation of one answered call, planned ahead from what the callee will say.

Used by the simulated mode: the callee's behaviour (turns and hang-up time) is
known in advance, so the whole conversation is computed once with the agent's
providers, then played back in (scaled) real time. Times are milliseconds since
the call was answered. :meth:`ConversationPlan.cut` clips a plan at any moment
(max duration, a hang-up request) and is the only way a conversation is shortened.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from agentcall.cell.agent.config import AgentConfig, AgentMode
from agentcall.cell.agent.optout import OptOutDetector
from agentcall.cell.agent.providers import ChatMessage, ProviderRegistry, Utterance
from agentcall.cell.audio.synth import SAMPLE_RATE_HZ, noise_speech
from agentcall.cell.domain.model import Role, Turn

GAP_MS = 300  # pause between one speaker and the next
HANGUP_AFTER_MS = 1000  # callee hangs up this long after its last turn (no talk_ms)
USER_MS_PER_CHAR = 80
USER_MIN_MS = 600
GOODBYE = "Understood. We will not call you again. Goodbye."


class EndReason(StrEnum):
    CALLEE_HANGUP = "callee_hangup"
    MAX_DURATION = "max_duration"
    MAX_TURNS = "max_turns"
    SILENCE_TIMEOUT = "silence_timeout"
    OPT_OUT = "opt_out"
    HANGUP_REQUESTED = "hangup_requested"


@dataclass(frozen=True)
class CalleeTurn:
    text: str
    at_ms: int | None = None
    duration_ms: int | None = None


@dataclass(frozen=True)
class AudioSpan:
    role: Role
    start_ms: int
    end_ms: int
    pcm: bytes  # 16-bit PCM at SAMPLE_RATE_HZ covering [start_ms, start_ms + len)


@dataclass(frozen=True)
class ConversationPlan:
    turns: tuple[Turn, ...]
    spans: tuple[AudioSpan, ...]
    end_ms: int
    end_reason: EndReason
    opt_out_at_ms: int | None = None
    opt_out_phrase: str | None = None

    @property
    def opt_out(self) -> bool:
        return self.opt_out_at_ms is not None

    def cut(self, at_ms: int, reason: EndReason) -> ConversationPlan:
        """This plan ended at ``at_ms`` instead (no-op when it already ends earlier)."""
        if at_ms >= self.end_ms:
            return self
        at_ms = max(at_ms, 0)
        turns = tuple(
            replace(t, end_ms=min(t.end_ms, at_ms)) for t in self.turns if t.start_ms < at_ms
        )
        spans = tuple(
            replace(s, end_ms=min(s.end_ms, at_ms)) for s in self.spans if s.start_ms < at_ms
        )
        keep_opt_out = self.opt_out_at_ms is not None and self.opt_out_at_ms <= at_ms
        return ConversationPlan(
            turns=turns,
            spans=spans,
            end_ms=at_ms,
            end_reason=reason,
            opt_out_at_ms=self.opt_out_at_ms if keep_opt_out else None,
            opt_out_phrase=self.opt_out_phrase if keep_opt_out else None,
        )


def user_speech_ms(text: str) -> int:
    return max(USER_MIN_MS, len(text) * USER_MS_PER_CHAR)


def limit_ms(plan_max_ms: int | None, config: AgentConfig) -> int | None:
    """Effective conversation limit: the smaller of the plan's and the agent's limits."""
    limits = [x for x in (plan_max_ms, config.conversation.max_duration_ms) if x is not None]
    return min(limits) if limits else None


class _Planner:
    def __init__(
        self, config: AgentConfig, providers: ProviderRegistry, detector: OptOutDetector
    ) -> None:
        self.config = config
        self.providers = providers
        self.detector = detector
        self.turns: list[Turn] = []
        self.spans: list[AudioSpan] = []
        self.history: list[ChatMessage] = []
        self.t = 0
        self.user_turns = 0
        self.opt_out_at: int | None = None
        self.opt_out_phrase: str | None = None

    @property
    def speaks(self) -> bool:
        return self.config.mode is AgentMode.FULL_AI

    def _add(self, role: Role, text: str, start: int, pcm: bytes) -> None:
        n = len(self.turns) + 1
        end = start + len(pcm) // 2 * 1000 // SAMPLE_RATE_HZ
        self.turns.append(Turn(f"turn-{n}", f"segment-{n}", role, text, start, end))
        self.spans.append(AudioSpan(role, start, end, pcm))
        self.t = end

    async def say(self, text: str, start: int) -> None:
        tts_config = self.config.tts
        assert tts_config is not None  # full_ai always has tts
        speech = await self.providers.get_tts(tts_config.provider_ref).synthesize(text, tts_config)
        self._add(Role.AGENT, text, start, speech.pcm)
        self.history.append(ChatMessage("assistant", text))

    def _barge_in(self, start: int) -> int:
        """Start of a callee turn: it interrupts the agent only if allowed."""
        if start >= self.t:
            return start
        last = self.spans[-1] if self.spans else None
        if self.config.conversation.allow_interrupt and last and last.role is Role.AGENT:
            self.spans[-1] = replace(last, end_ms=max(start, last.start_ms))
            self.turns[-1] = replace(self.turns[-1], end_ms=self.spans[-1].end_ms)
            return max(start, last.start_ms)
        return self.t

    async def hear(self, turn: CalleeTurn) -> str:
        start = self._barge_in(turn.at_ms if turn.at_ms is not None else self.t + GAP_MS)
        duration = turn.duration_ms or user_speech_ms(turn.text)
        pcm = noise_speech(duration, seed=len(self.turns) + 1)
        utterance = Utterance(pcm=pcm, sample_rate_hz=SAMPLE_RATE_HZ, reference_text=turn.text)
        asr = self.providers.get_asr(self.config.asr.provider_ref)
        heard = (await asr.transcribe(utterance, self.config.asr)).text
        self._add(Role.USER, heard, start, pcm)
        self.history.append(ChatMessage("user", heard))
        self.user_turns += 1
        return heard

    async def answer(self) -> None:
        llm_config = self.config.llm
        assert llm_config is not None  # full_ai always has llm
        messages = [ChatMessage("system", self.config.prompt_text or ""), *self.history]
        reply = await self.providers.get_llm(llm_config.provider_ref).reply(messages, llm_config)
        await self.say(reply, self.t + GAP_MS)

    def silent_too_long(self, next_start: int) -> bool:
        timeout = self.config.conversation.silence_timeout_ms
        return timeout is not None and next_start - self.t > timeout

    def plan(self, end_ms: int, reason: EndReason) -> ConversationPlan:
        whole = ConversationPlan(
            turns=tuple(self.turns),
            spans=tuple(self.spans),
            end_ms=max(end_ms, self.t),
            end_reason=reason,
            opt_out_at_ms=self.opt_out_at,
            opt_out_phrase=self.opt_out_phrase,
        )
        return whole.cut(end_ms, reason)


def _silence_end(p: _Planner) -> int:
    return p.t + (p.config.conversation.silence_timeout_ms or 0)


async def _converse(
    p: _Planner, callee_turns: tuple[CalleeTurn, ...], talk_ms: int | None
) -> ConversationPlan:
    max_turns = p.config.conversation.max_turns
    for turn in callee_turns:
        start = turn.at_ms if turn.at_ms is not None else p.t + GAP_MS
        if talk_ms is not None and start >= talk_ms:
            break
        if p.silent_too_long(start):
            return p.plan(_silence_end(p), EndReason.SILENCE_TIMEOUT)
        heard = await p.hear(turn)
        phrase = p.detector.detect(heard)
        if phrase is not None:
            p.opt_out_at, p.opt_out_phrase = p.t, phrase
            if p.speaks:
                await p.say(GOODBYE, p.t + GAP_MS)
            return p.plan(p.t, EndReason.OPT_OUT)
        if p.speaks:
            await p.answer()
        if max_turns is not None and p.user_turns >= max_turns:
            return p.plan(p.t, EndReason.MAX_TURNS)
    hangup = talk_ms if talk_ms is not None else p.t + HANGUP_AFTER_MS
    if p.silent_too_long(hangup):
        return p.plan(_silence_end(p), EndReason.SILENCE_TIMEOUT)
    return p.plan(hangup, EndReason.CALLEE_HANGUP)


async def plan_conversation(
    config: AgentConfig,
    providers: ProviderRegistry,
    callee_turns: tuple[CalleeTurn, ...],
    *,
    talk_ms: int | None,
    max_duration_ms: int | None,
    detector: OptOutDetector | None = None,
) -> ConversationPlan:
    """The whole conversation: opening, callee turns, agent replies, opt-out and end.

    ``talk_ms`` is when the callee hangs up (None: shortly after its last turn);
    ``max_duration_ms`` is the plan's limit, combined with the agent's own.
    """
    p = _Planner(config, providers, detector or OptOutDetector())
    opening = config.conversation.opening
    if p.speaks and opening:
        await p.say(opening, 0)
    plan = await _converse(p, callee_turns, talk_ms)
    if talk_ms is not None:
        plan = plan.cut(talk_ms, EndReason.CALLEE_HANGUP)
    limit = limit_ms(max_duration_ms, config)
    if limit is not None:
        plan = plan.cut(limit, EndReason.MAX_DURATION)
    return plan


def render_pcm(plan: ConversationPlan, from_ms: int, to_ms: int) -> bytes:
    """The mixed recording of ``[from_ms, to_ms)``: silence where nobody speaks."""
    rate = SAMPLE_RATE_HZ // 1000  # samples per ms
    out = bytearray((to_ms - from_ms) * rate * 2)
    for span in plan.spans:
        a, b = max(span.start_ms, from_ms), min(span.end_ms, to_ms)
        if a >= b:
            continue
        src = span.pcm[(a - span.start_ms) * rate * 2 : (b - span.start_ms) * rate * 2]
        dst = (a - from_ms) * rate * 2
        out[dst : dst + len(src)] = src
    return bytes(out)
