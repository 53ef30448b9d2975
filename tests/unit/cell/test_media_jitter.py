"""Receive statistics (RFC 3550 A.8) and the jitter buffer: reordering, loss, late frames."""

from __future__ import annotations

import pytest

from agentcall.cell.media.jitter import JitterBuffer, ReceiveStats, extend_sequence, on_packet


@pytest.mark.parametrize(
    ("highest", "seq", "expected"),
    [
        (None, 7, 7),
        (10, 11, 11),
        (10, 8, 8),
        (65535, 0, 65536),
        (65536, 65535, 65535),
        (131071, 2, 131074),
    ],
)
def test_extend_sequence(highest: int | None, seq: int, expected: int) -> None:
    assert extend_sequence(highest, seq) == expected


def test_steady_stream_has_no_jitter_or_loss() -> None:
    stats = ReceiveStats()
    for i in range(100):
        stats = on_packet(stats, i, i * 160, i * 0.02)
    assert (stats.received, stats.lost) == (100, 0)
    assert stats.jitter_ms == pytest.approx(0.0)


def test_loss_and_jitter_are_counted() -> None:
    stats = ReceiveStats()
    for i in range(100):
        if i % 10 == 3:
            continue  # 10 % loss
        delay = 0.005 if i % 2 else 0.0  # 5 ms alternating delay
        stats = on_packet(stats, (65500 + i) & 0xFFFF, i * 160, i * 0.02 + delay)
    assert (stats.expected, stats.lost) == (100, 10)
    assert stats.loss_fraction == pytest.approx(0.10)
    assert 2.0 < stats.jitter_ms < 6.0


def frames(buffer: JitterBuffer, ticks: int) -> list[bytes | None]:
    return [buffer.pop() for _ in range(ticks)]


def test_reordered_frames_play_in_order() -> None:
    jb = JitterBuffer(depth=3)
    for seq in (2, 0, 1, 4, 3):
        jb.push(seq, bytes([seq]))
    assert frames(jb, 5) == [b"\x00", b"\x01", b"\x02", b"\x03", b"\x04"]
    assert (jb.late, jb.concealed, jb.played) == (0, 0, 5)


def test_lost_frame_is_concealed_and_late_one_dropped() -> None:
    jb = JitterBuffer(depth=2)
    for seq in (0, 1, 3):
        jb.push(seq, bytes([seq]))
    assert frames(jb, 4) == [b"\x00", b"\x01", None, b"\x03"]
    jb.push(2, b"\x02")  # arrives after its slot
    assert (jb.late, jb.concealed) == (1, 1)


def test_nothing_plays_before_prefill_and_duplicates_are_dropped() -> None:
    jb = JitterBuffer(depth=3)
    jb.push(0, b"a")
    jb.push(0, b"a")
    assert jb.pop() is None and jb.duplicates == 1 and jb.concealed == 0


def test_overflow_drops_oldest() -> None:
    jb = JitterBuffer(depth=1, capacity=3)
    for seq in range(5):
        jb.push(seq, bytes([seq]))
    assert jb.overflowed == 2
    assert frames(jb, 3) == [b"\x02", b"\x03", b"\x04"]


def test_pause_then_resume_rebuffers_without_late_frames() -> None:
    jb = JitterBuffer(depth=2, rebuffer_after=3)
    jb.push(0, b"0")
    jb.push(1, b"1")
    assert frames(jb, 2) == [b"0", b"1"]
    assert frames(jb, 3) == [None, None, None]  # peer paused: rebuffer
    jb.push(2, b"2")
    assert jb.pop() is None  # refilling to depth
    jb.push(3, b"3")
    assert frames(jb, 2) == [b"2", b"3"]
    assert (jb.late, jb.concealed, jb.underruns) == (0, 0, 3)


def test_short_underrun_keeps_the_slot() -> None:
    jb = JitterBuffer(depth=1)
    jb.push(0, b"0")
    assert frames(jb, 3) == [b"0", None, None]
    jb.push(1, b"1")
    assert jb.pop() == b"1" and jb.late == 0
