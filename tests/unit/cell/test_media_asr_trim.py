"""Line silence around an utterance is trimmed before offline ASR (pocketsphinx)."""

from __future__ import annotations

from array import array

import pytest

from agentcall.cell.agent.providers_sphinx import trim_silence


def pcm(*parts: tuple[int, int]) -> bytes:
    """(value, count) runs of 16-bit samples."""
    out = array("h")
    for value, count in parts:
        out.extend([value] * count)
    return out.tobytes()


@pytest.mark.parametrize(
    ("audio", "expected_samples"),
    [
        (pcm((8, 8000), (3000, 800), (-8, 8000)), 800 + 2 * 1200),  # 150 ms margins
        (pcm((3000, 400)), 400),
        (pcm((8, 400), (3000, 400)), 800),
        (pcm((8, 4000)), 0),  # idle channel only
        (b"", 0),
    ],
)
def test_trim_silence(audio: bytes, expected_samples: int) -> None:
    assert abs(len(trim_silence(audio, 8000)) // 2 - expected_samples) <= 40
