"""G.711 A-law tables and RTP packets (RFC 3550 §5.1)."""

from __future__ import annotations

import struct
import warnings
from array import array

import pytest

from agentcall.cell.domain.errors import SipParseError
from agentcall.cell.media import g711
from agentcall.cell.media.rtp import RtpPacket, SendState, parse_rtp, serialize_rtp


@pytest.mark.parametrize(
    ("sample", "code"),
    [(0, 0xD5), (-1, 0x55), (32767, 0xAA), (-32768, 0x2A), (8, 0xD5), (1000, 0xFA)],
)
def test_known_alaw_codes(sample: int, code: int) -> None:
    assert g711.alaw_from_linear(sample) == code


def test_tables_match_the_reference_codec() -> None:
    """Every 16-bit sample encodes, and every code decodes, as CPython's audioop does."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        audioop = pytest.importorskip("audioop")
    pcm = array("h", range(-32768, 32768)).tobytes()
    assert g711.encode(pcm) == audioop.lin2alaw(pcm, 2)
    codes = bytes(range(256))
    assert g711.decode(codes) == audioop.alaw2lin(codes, 2)


def test_round_trip_error_is_within_the_segment_step() -> None:
    for sample in range(-32768, 32768, 97):
        back = struct.unpack("<h", g711.decode(g711.encode(struct.pack("<h", sample))))[0]
        assert abs(back - sample) <= max(16, abs(sample) // 16)


def test_odd_byte_is_ignored() -> None:
    assert len(g711.encode(b"\x00\x01\x02")) == 1


def test_rtp_round_trip_and_send_counters() -> None:
    state = SendState(ssrc=0x1234, sequence=65535, timestamp=0xFFFFFF60)
    first, state = state.next(b"\xd5" * 160)
    second, state = state.next(b"\xd5" * 160)
    assert first.marker and not second.marker
    assert (second.sequence, second.timestamp) == (0, 0)
    assert parse_rtp(serialize_rtp(first)) == first


def test_rtp_with_csrc_extension_and_padding() -> None:
    header = struct.pack("!BBHII", 0x80 | 0x20 | 0x10 | 1, 8, 5, 800, 9)
    data = header + b"CSRC" + struct.pack("!HH", 0xBEDE, 1) + b"EXT!" + b"abc" + b"\x00\x02"
    assert parse_rtp(data) == RtpPacket(8, 5, 800, 9, b"abc")


@pytest.mark.parametrize(
    "data",
    [b"\x80\x08", b"\x40" + bytes(11), struct.pack("!BBHII", 0x8F, 8, 1, 1, 1)],
)
def test_bad_rtp_is_refused(data: bytes) -> None:
    with pytest.raises(SipParseError):
        parse_rtp(data)
