"""RTP packets (RFC 3550 §5.1): parse, serialise, and the sending side's counters."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from agentcall.cell.domain.errors import SipParseError

HEADER = struct.Struct("!BBHII")
FRAME_MS = 20
SAMPLES_PER_FRAME = 160  # 20 ms at 8 kHz
PCM_BYTES_PER_FRAME = 2 * SAMPLES_PER_FRAME


@dataclass(frozen=True)
class RtpPacket:
    payload_type: int
    sequence: int
    timestamp: int
    ssrc: int
    payload: bytes
    marker: bool = False


def parse_rtp(data: bytes) -> RtpPacket:
    if len(data) < HEADER.size:
        raise SipParseError("RTP packet shorter than its header")
    first, second, sequence, timestamp, ssrc = HEADER.unpack_from(data)
    if first >> 6 != 2:
        raise SipParseError("RTP version is not 2")
    offset = HEADER.size + 4 * (first & 0x0F)
    if first & 0x10:  # header extension
        if len(data) < offset + 4:
            raise SipParseError("RTP extension header truncated")
        offset += 4 + 4 * struct.unpack_from("!H", data, offset + 2)[0]
    end = len(data)
    if first & 0x20 and end > offset:  # padding
        end -= data[-1]
    if offset > end:
        raise SipParseError("RTP packet truncated")
    return RtpPacket(
        payload_type=second & 0x7F,
        sequence=sequence,
        timestamp=timestamp,
        ssrc=ssrc,
        payload=data[offset:end],
        marker=bool(second & 0x80),
    )


def serialize_rtp(packet: RtpPacket) -> bytes:
    second = (0x80 if packet.marker else 0) | (packet.payload_type & 0x7F)
    header = HEADER.pack(0x80, second, packet.sequence, packet.timestamp, packet.ssrc)
    return header + packet.payload


@dataclass(frozen=True)
class SendState:
    """Counters of the outgoing stream; ``next`` gives the packet of one 20 ms frame."""

    ssrc: int
    sequence: int
    timestamp: int
    payload_type: int = 8
    started: bool = False

    def next(self, payload: bytes) -> tuple[RtpPacket, SendState]:
        packet = RtpPacket(
            payload_type=self.payload_type,
            sequence=self.sequence,
            timestamp=self.timestamp,
            ssrc=self.ssrc,
            payload=payload,
            marker=not self.started,
        )
        state = SendState(
            ssrc=self.ssrc,
            sequence=(self.sequence + 1) & 0xFFFF,
            timestamp=(self.timestamp + len(payload)) & 0xFFFFFFFF,
            payload_type=self.payload_type,
            started=True,
        )
        return packet, state
