"""SIP messages (RFC 3261 §7): frozen values, parse from bytes, serialise to bytes.

Only what a UAC needs: requests and responses, header lookup by canonical name
(compact forms expanded), header parameters, name-addr URIs, and stream framing
by Content-Length for TCP.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from agentcall.cell.domain.errors import SipParseError

MAX_MESSAGE_BYTES = 65_535

_COMPACT = {
    "i": "Call-ID",
    "m": "Contact",
    "f": "From",
    "t": "To",
    "v": "Via",
    "l": "Content-Length",
    "c": "Content-Type",
    "k": "Supported",
    "s": "Subject",
}
_CANONICAL = {
    name.lower(): name
    for name in (
        "Call-ID",
        "CSeq",
        "WWW-Authenticate",
        "Proxy-Authenticate",
        "Proxy-Authorization",
        "Max-Forwards",
        "Record-Route",
        "User-Agent",
        "Content-Length",
        "Content-Type",
        "RSeq",
        "RAck",
    )
}

Headers = tuple[tuple[str, str], ...]


def canonical_name(name: str) -> str:
    """``v`` -> ``Via``, ``call-id`` -> ``Call-ID``, ``x-foo`` -> ``X-Foo``."""
    stripped = name.strip()
    lower = stripped.lower()
    if lower in _COMPACT:
        return _COMPACT[lower]
    if lower in _CANONICAL:
        return _CANONICAL[lower]
    return "-".join(part.capitalize() for part in lower.split("-"))


@dataclass(frozen=True)
class _Message:
    headers: Headers
    body: bytes

    def header(self, name: str) -> str | None:
        """First value of header ``name`` (any case, compact form allowed)."""
        wanted = canonical_name(name)
        for key, value in self.headers:
            if key == wanted:
                return value
        return None

    def header_all(self, name: str) -> list[str]:
        wanted = canonical_name(name)
        return [value for key, value in self.headers if key == wanted]

    def require(self, name: str) -> str:
        value = self.header(name)
        if value is None:
            raise SipParseError(f"SIP message lacks the {canonical_name(name)} header")
        return value

    @property
    def cseq(self) -> tuple[int, str]:
        parts = self.require("CSeq").split()
        if len(parts) != 2 or not parts[0].isdigit():
            raise SipParseError("CSeq header must be '<number> <METHOD>'")
        return int(parts[0]), parts[1].upper()

    @property
    def call_id(self) -> str:
        return self.require("Call-ID").strip()


@dataclass(frozen=True)
class SipRequest(_Message):
    method: str
    uri: str

    def with_header(self, name: str, value: str) -> SipRequest:
        return replace(self, headers=(*self.headers, (canonical_name(name), value)))


@dataclass(frozen=True)
class SipResponse(_Message):
    status: int
    reason: str


SipMessage = SipRequest | SipResponse


def _parse_headers(lines: list[str]) -> Headers:
    out: list[tuple[str, str]] = []
    for line in lines:
        if line[:1] in (" ", "\t") and out:  # folded continuation (RFC 3261 §7.3.1)
            name, value = out[-1]
            out[-1] = (name, f"{value} {line.strip()}")
            continue
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise SipParseError(f"malformed SIP header line ({line[:40]!r})")
        out.append((canonical_name(name), value.strip()))
    return tuple(out)


def _parse_start(line: str, headers: Headers, body: bytes) -> SipMessage:
    parts = line.split(" ", 2)
    if len(parts) == 3 and parts[0] == "SIP/2.0":
        if not (parts[1].isdigit() and len(parts[1]) == 3):
            raise SipParseError(f"malformed SIP status line ({line[:40]!r})")
        return SipResponse(headers=headers, body=body, status=int(parts[1]), reason=parts[2])
    if len(parts) == 3 and parts[2] == "SIP/2.0" and parts[0].isalpha():
        return SipRequest(headers=headers, body=body, method=parts[0].upper(), uri=parts[1])
    raise SipParseError(f"malformed SIP start line ({line[:40]!r})")


def parse_message(data: bytes) -> SipMessage:
    """Parse one complete SIP message (a UDP datagram or a framed TCP message)."""
    if len(data) > MAX_MESSAGE_BYTES:
        raise SipParseError(f"SIP message of {len(data)} bytes exceeds {MAX_MESSAGE_BYTES}")
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        raise SipParseError("SIP message lacks the blank line ending its headers")
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SipParseError("SIP headers are not valid UTF-8") from exc
    lines = text.split("\r\n")
    headers = _parse_headers(lines[1:])
    message = _parse_start(lines[0].strip(), headers, body)
    length = message.header("Content-Length")
    if length is not None:
        if not length.strip().isdigit() or int(length) > len(body):
            raise SipParseError("Content-Length does not match the body")
        message = replace(message, body=body[: int(length)])
    return message


def serialize(message: SipMessage) -> bytes:
    """Bytes on the wire; Content-Length is always (re)computed from the body."""
    if isinstance(message, SipRequest):
        start = f"{message.method} {message.uri} SIP/2.0"
    else:
        start = f"SIP/2.0 {message.status} {message.reason}"
    lines = [start]
    lines += [f"{k}: {v}" for k, v in message.headers if k != "Content-Length"]
    lines.append(f"Content-Length: {len(message.body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + message.body


def split_stream(buffer: bytes) -> tuple[list[bytes], bytes]:
    """Cut complete messages off a TCP byte stream; returns (messages, remainder)."""
    messages: list[bytes] = []
    while True:
        buffer = buffer.lstrip(b"\r\n")  # keep-alive CRLFs (RFC 5626 §3.5.1)
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(buffer) > MAX_MESSAGE_BYTES:
                raise SipParseError("SIP stream sends headers longer than the limit")
            return messages, buffer
        length = 0
        for line in buffer[:end].split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if canonical_name(name.decode("latin-1")) == "Content-Length":
                if not value.strip().isdigit():
                    raise SipParseError("Content-Length is not a number")
                length = int(value.strip())
        total = end + 4 + length
        if len(buffer) < total:
            return messages, buffer
        messages.append(buffer[:total])
        buffer = buffer[total:]


def header_param(value: str, name: str) -> str | None:
    """Parameter ``name`` of a header value (``;tag=abc`` -> ``abc``), outside <...>."""
    tail = value.rsplit(">", 1)[-1]
    for part in tail.split(";")[1:]:
        key, _, val = part.partition("=")
        if key.strip().lower() == name.lower():
            return val.strip()
    return None


def tag_of(value: str) -> str | None:
    return header_param(value, "tag")


def uri_of(name_addr: str) -> str:
    """The URI of a name-addr (``"x" <sip:a@b>;tag=1`` -> ``sip:a@b``) or addr-spec."""
    if "<" in name_addr:
        start = name_addr.index("<") + 1
        end = name_addr.index(">", start)
        return name_addr[start:end].strip()
    return name_addr.split(";", 1)[0].strip()


def via_branch(message: SipMessage) -> str | None:
    via = message.header("Via")
    return None if via is None else header_param(via, "branch")
