"""SDP offer/answer (RFC 4566, RFC 3264) for one audio stream of PCMA/8000.

The cell always offers PCMA (static payload type 8 unless the media profile
says otherwise) and, optionally, telephone-event; the answer must keep PCMA.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentcall.cell.domain.errors import SipParseError

PCMA_PAYLOAD_TYPE = 8
TELEPHONE_EVENT_PAYLOAD_TYPE = 101


@dataclass(frozen=True)
class MediaOffer:
    address: str
    port: int
    session_id: int
    payload_type: int = PCMA_PAYLOAD_TYPE
    telephone_event: int | None = TELEPHONE_EVENT_PAYLOAD_TYPE
    ptime_ms: int = 20


@dataclass(frozen=True)
class RemoteMedia:
    address: str
    port: int
    payload_type: int
    telephone_event: int | None
    direction: str


def build_offer(offer: MediaOffer) -> bytes:
    formats = [str(offer.payload_type)]
    lines = [
        "v=0",
        f"o=agentcall-cell {offer.session_id} {offer.session_id} IN IP4 {offer.address}",
        "s=agentcall",
        f"c=IN IP4 {offer.address}",
        "t=0 0",
    ]
    attrs = [f"a=rtpmap:{offer.payload_type} PCMA/8000"]
    if offer.telephone_event is not None:
        formats.append(str(offer.telephone_event))
        attrs += [
            f"a=rtpmap:{offer.telephone_event} telephone-event/8000",
            f"a=fmtp:{offer.telephone_event} 0-15",
        ]
    lines.append(f"m=audio {offer.port} RTP/AVP {' '.join(formats)}")
    lines += attrs + [f"a=ptime:{offer.ptime_ms}", "a=sendrecv"]
    return ("\r\n".join(lines) + "\r\n").encode("ascii")


@dataclass
class _Audio:
    port: int
    formats: list[int]
    address: str | None = None


def _rtpmaps(lines: list[str]) -> dict[int, str]:
    maps: dict[int, str] = {}
    for line in lines:
        if line.startswith("a=rtpmap:"):
            pt, _, codec = line[len("a=rtpmap:") :].partition(" ")
            if pt.strip().isdigit():
                maps[int(pt)] = codec.strip().upper()
    return maps


def _audio_section(lines: list[str]) -> tuple[_Audio, str | None]:
    session_addr: str | None = None
    audio: _Audio | None = None
    for line in lines:
        if line.startswith("c=") and audio is None:
            session_addr = line.split()[-1]
        elif line.startswith("m=audio "):
            fields = line.split()
            if len(fields) < 4 or not fields[1].isdigit():
                raise SipParseError("SDP m=audio line is malformed")
            formats = [int(f) for f in fields[3:] if f.isdigit()]
            audio = _Audio(port=int(fields[1]), formats=formats)
        elif line.startswith("c=") and audio is not None:
            audio.address = line.split()[-1]
    if audio is None:
        raise SipParseError("SDP answer has no audio stream")
    return audio, session_addr


def _direction(lines: list[str]) -> str:
    for line in lines:
        if line in ("a=sendrecv", "a=sendonly", "a=recvonly", "a=inactive"):
            return line[2:]
    return "sendrecv"


def parse_answer(body: bytes, offered_payload_type: int = PCMA_PAYLOAD_TYPE) -> RemoteMedia:
    """Read the peer's answer; raises SipParseError if PCMA was not kept."""
    try:
        lines = [ln.strip() for ln in body.decode("utf-8").splitlines() if ln.strip()]
    except UnicodeDecodeError as exc:
        raise SipParseError("SDP body is not UTF-8") from exc
    audio, session_addr = _audio_section(lines)
    address = audio.address or session_addr
    if address is None:
        raise SipParseError("SDP answer has no connection address")
    maps = _rtpmaps(lines)
    if audio.port == 0 or offered_payload_type not in audio.formats:
        raise SipParseError("SDP answer does not accept PCMA/8000")
    if maps.get(offered_payload_type, "PCMA/8000") != "PCMA/8000":
        raise SipParseError("SDP answer maps the PCMA payload type to another codec")
    events = [pt for pt, codec in maps.items() if codec.startswith("TELEPHONE-EVENT")]
    return RemoteMedia(
        address=address,
        port=audio.port,
        payload_type=offered_payload_type,
        telephone_event=events[0] if events and events[0] in audio.formats else None,
        direction=_direction(lines),
    )
