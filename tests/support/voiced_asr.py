"""A streaming mock ASR whose hypotheses follow the callee's voiced audio, not the clock:
the tests of preemptive generation pause the callee and need the words heard so far."""

from __future__ import annotations

from agentcall.cell.agent.config import ASRConfig
from agentcall.cell.agent.mock import MockASR
from agentcall.cell.agent.providers import Recognizer


class VoicedWordsASR(MockASR):
    """Hypotheses with one more word of the script per 200 ms of voiced audio (silence
    adds none); the final is the script's text, or ``final`` when given."""

    def __init__(self, text: str, final: str | None = None) -> None:
        super().__init__()
        self.text, self.final = text, final

    async def open_recognizer(self, config: ASRConfig, sample_rate_hz: int) -> Recognizer:
        text, final = self.text, self.final or self.text

        class Voiced:
            voiced_ms = 0

            async def accept(self, pcm: bytes) -> str:
                frames = [pcm[i : i + 320] for i in range(0, len(pcm), 320)]
                self.voiced_ms += 20 * sum(any(f) for f in frames)
                return " ".join(text.split()[: self.voiced_ms // 200])

            async def finish(self, pcm: bytes) -> str:
                return final

            def close(self) -> None:
                pass

        return Voiced()
