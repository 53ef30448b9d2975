"""Both directions of a call mixed into one 8 kHz mono 16-bit WAV.

Mono is what the call.result contract shows (channels 1, 8000 Hz) and what the
simulated mode writes; the per-direction audio is still available to the agent.
Each 20 ms tick mixes what was sent and what was played from the jitter buffer,
so the two directions stay aligned on the call's own clock.
"""

from __future__ import annotations

from array import array

from agentcall.cell.recording.wav import WavWriter

FLUSH_FRAMES = 50  # write to disk once a second


def mix(a: bytes | None, b: bytes | None) -> bytes:
    """Sum two 16-bit PCM frames with saturation; a missing side counts as silence."""
    if not a:
        return b or b""
    if not b:
        return a
    left, right = array("h"), array("h")
    left.frombytes(a)
    right.frombytes(b)
    if len(right) > len(left):
        left, right = right, left
    out = array("h", left)
    for i, v in enumerate(right):
        s = out[i] + v
        out[i] = 32767 if s > 32767 else (-32768 if s < -32768 else s)
    return out.tobytes()


class CallRecorder:
    """Appends one mixed frame per tick; flushes once a second so a crash keeps a valid WAV."""

    def __init__(self, writer: WavWriter) -> None:
        self._writer = writer
        self._pending = bytearray()
        self._frames = 0

    def tick(self, sent: bytes | None, heard: bytes | None, frame_bytes: int) -> None:
        frame = mix(sent, heard) or bytes(frame_bytes)
        self._pending += frame
        self._frames += 1
        if self._frames % FLUSH_FRAMES == 0:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self._writer.append(bytes(self._pending))
            self._pending.clear()

    @property
    def duration_ms(self) -> int:
        return self._frames * 20

    def close(self) -> None:
        """Write what is pending; the owner of the writer closes the file."""
        self.flush()
