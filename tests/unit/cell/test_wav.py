"""The WAV writer: 8 kHz mono 16-bit, valid after every append, repairable after a crash."""

from __future__ import annotations

import hashlib
import wave
from pathlib import Path

from agentcall.cell.audio.synth import noise_speech, peak, silence, tone_speech
from agentcall.cell.recording.wav import WavWriter, repair_wav, wav_info


def test_writer_produces_8khz_mono_16bit(tmp_path: Path) -> None:
    path = tmp_path / "c.wav"
    writer = WavWriter(path)
    writer.append(tone_speech(500, 400))
    writer.append(silence(250))
    writer.append(noise_speech(250))
    info = writer.close()
    with wave.open(str(path), "rb") as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (8000, 1, 2)
        assert w.getnframes() == 8000
        frames = w.readframes(8000)
    assert info.duration_ms == 1000
    assert info.size_bytes == 44 + 16000 == path.stat().st_size
    assert info.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert peak(frames[:8000]) > 1000  # the tone is audible
    assert peak(frames[8000:12000]) == 0  # the silence is silent
    assert peak(frames[12000:]) > 1000  # the noise is audible


def test_file_is_valid_after_each_append_without_close(tmp_path: Path) -> None:
    path = tmp_path / "live.wav"
    writer = WavWriter(path)
    assert wav_info(path).duration_ms == 0
    writer.append(tone_speech(300, 250))
    assert wav_info(path).duration_ms == 300  # what a SIGKILL would leave behind
    writer.append(tone_speech(200, 250))
    assert wav_info(path).duration_ms == 500
    writer.close()


def test_odd_byte_counts_are_trimmed(tmp_path: Path) -> None:
    writer = WavWriter(tmp_path / "odd.wav")
    writer.append(b"\x01\x02\x03")
    assert writer.frames == 1
    assert writer.close().duration_ms == 0


def test_repair_restores_a_header_cut_mid_write(tmp_path: Path) -> None:
    path = tmp_path / "cut.wav"
    writer = WavWriter(path)
    writer.append(tone_speech(1000, 400))
    writer.close()
    raw = bytearray(path.read_bytes())
    raw[40:44] = b"\x00\x00\x00\x00"  # header says no data: write was never patched
    path.write_bytes(bytes(raw) + b"\x07\x00\x08")  # plus one whole and one half sample
    info = repair_wav(path)
    assert info.duration_ms == 1000
    with wave.open(str(path), "rb") as w:
        assert w.getnframes() == 8001


def test_repair_keeps_a_valid_file_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "ok.wav"
    writer = WavWriter(path)
    writer.append(noise_speech(400))
    before = writer.close()
    assert repair_wav(path) == before


def test_repair_of_garbage_yields_a_valid_empty_wav(tmp_path: Path) -> None:
    path = tmp_path / "junk.wav"
    path.write_bytes(b"RIFF")
    info = repair_wav(path)
    assert info.duration_ms == 0
    assert info.size_bytes == 44
