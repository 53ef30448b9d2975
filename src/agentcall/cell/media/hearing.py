"""What the agent hears in each 20 ms frame of the callee: voice (VAD), in-band DTMF
keys, the voicemail beep, and the answering-machine verdict; and the cell's voice
settings (:class:`VoiceOptions`).

Tones are read only when a frame has some energy (silence costs nothing), and a frame
holding a DTMF tone or a beep never counts as voice: key presses and beeps do not
open utterances or interrupt the agent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentcall.cell.audio import tones
from agentcall.cell.audio.amd import AmdParams, AmdState, Verdict, amd_step
from agentcall.cell.audio.vad import EnergyVAD, VoiceDetector
from agentcall.cell.domain.model import AmdAction

END_OF_UTTERANCE_MS = 500


@dataclass(frozen=True)
class VoiceOptions:
    """The voice settings of a call: the cell's (not the task's: the agent config has no
    room for them), with ``amd`` chosen per call by :func:`amd_for_call`."""

    amd: AmdAction = AmdAction.OFF
    amd_params: AmdParams = field(default_factory=AmdParams)
    opt_out_digits: frozenset[str] = frozenset()
    end_of_utterance_ms: int = END_OF_UTTERANCE_MS
    inband_dtmf: bool = True
    preemptive: bool = True  # write the reply during the end-of-turn wait


def amd_for_call(requested: AmdAction | None, default: AmdAction, opening: str | None) -> AmdAction:
    """The answering-machine handling of one call (pure): the call plan's ``amd`` (the
    Dispatcher's choice) wins over the cell's default (``CELL_AMD``); ``leave_message``
    without an opening line to leave hangs up at once instead of waiting for the beep."""
    action = default if requested is None else requested
    if action is AmdAction.LEAVE_MESSAGE and not opening:
        return AmdAction.HANGUP
    return action


@dataclass(frozen=True)
class Reading:
    voiced: bool
    key: str | None = None  # an in-band key press, reported once
    verdict: Verdict | None = None  # the AMD verdict, when it changed with this frame
    beep_ended_at_ms: int | None = None


@dataclass
class Hearing:
    vad: VoiceDetector = field(default_factory=EnergyVAD)
    options: VoiceOptions = field(default_factory=VoiceOptions)
    amd: AmdState = field(default_factory=AmdState)
    keys: tones.KeyPress = field(default_factory=tones.KeyPress)
    beep: tones.BeepTracker = field(default_factory=tones.BeepTracker)

    @property
    def detecting_machines(self) -> bool:
        return self.options.amd is not AmdAction.OFF

    def hear(self, pcm: bytes | None, now_ms: int) -> Reading:
        if pcm is None:
            return self._after(False, None, None, now_ms)
        shares = tones.tone_shares(pcm)
        if shares is None:  # too quiet for a tone (or for speech)
            return self._after(False, None, None, now_ms)
        key = tones.dtmf_key(shares) if self.options.inband_dtmf else None
        beep = tones.beep_hz(shares) if self.detecting_machines else None
        voiced = key is None and beep is None and self.vad.is_speech(pcm)
        return self._after(voiced, key, beep, now_ms)

    def _after(self, voiced: bool, key: str | None, beep: int | None, now_ms: int) -> Reading:
        self.keys, pressed = self.keys.step(key)
        heard_before = self.beep.heard_hz
        ended_before = self.beep.ended_at_ms
        self.beep = self.beep.step(beep, now_ms)
        verdict = None
        if self.detecting_machines:
            before = self.amd.verdict
            new_beep = self.beep.heard_hz is not None and heard_before is None
            self.amd = amd_step(self.amd, voiced, new_beep, self.options.amd_params)
            verdict = self.amd.verdict if self.amd.verdict is not before else None
        ended = self.beep.ended_at_ms if self.beep.ended_at_ms != ended_before else None
        return Reading(voiced, pressed, verdict, ended)
