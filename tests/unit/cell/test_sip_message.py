"""SIP message parse/serialise, headers and TCP framing (RFC 3261 §7)."""

from __future__ import annotations

import pytest

from agentcall.cell.domain.errors import SipParseError
from agentcall.cell.sip.message import (
    SipRequest,
    SipResponse,
    canonical_name,
    header_param,
    parse_message,
    serialize,
    split_stream,
    tag_of,
    uri_of,
    via_branch,
)

RESPONSE = (
    b"SIP/2.0 180 Ringing\r\n"
    b"v: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKabc;rport\r\n"
    b"f: <sip:BD00000000@trunk>;tag=local1\r\n"
    b"t: <sip:15003164745@trunk>;tag=remote9\r\n"
    b"i: call-1@cell\r\n"
    b"CSeq: 1 INVITE\r\n"
    b"Content-Length: 0\r\n\r\n"
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("v", "Via"),
        ("i", "Call-ID"),
        ("call-id", "Call-ID"),
        ("CSEQ", "CSeq"),
        ("www-authenticate", "WWW-Authenticate"),
        ("x-custom-thing", "X-Custom-Thing"),
        ("l", "Content-Length"),
    ],
)
def test_canonical_header_names(raw: str, expected: str) -> None:
    assert canonical_name(raw) == expected


def test_parse_response_expands_compact_headers() -> None:
    msg = parse_message(RESPONSE)
    assert isinstance(msg, SipResponse)
    assert (msg.status, msg.reason) == (180, "Ringing")
    assert msg.call_id == "call-1@cell"
    assert msg.cseq == (1, "INVITE")
    assert tag_of(msg.require("To")) == "remote9"
    assert via_branch(msg) == "z9hG4bKabc"


def test_request_round_trip_recomputes_content_length() -> None:
    req = SipRequest(
        headers=(("Via", "SIP/2.0/UDP a:1;branch=z9hG4bK1"), ("Content-Length", "999")),
        body=b"v=0\r\n",
        method="INVITE",
        uri="sip:1@b",
    )
    wire = serialize(req)
    assert b"Content-Length: 5\r\n" in wire and b"999" not in wire
    back = parse_message(wire)
    assert isinstance(back, SipRequest)
    assert (back.method, back.uri, back.body) == ("INVITE", "sip:1@b", b"v=0\r\n")


def test_folded_header_is_joined() -> None:
    msg = parse_message(b"BYE sip:a@b SIP/2.0\r\nSubject: one\r\n two\r\nCSeq: 2 BYE\r\n\r\n")
    assert msg.header("Subject") == "one two"


@pytest.mark.parametrize(
    "raw",
    [
        b"garbage",
        b"HELLO\r\n\r\n",
        b"SIP/2.0 abc OK\r\n\r\n",
        b"INVITE sip:a SIP/3.0\r\n\r\n",
        b"SIP/2.0 200 OK\r\nNoColonHere\r\n\r\n",
        b"SIP/2.0 200 OK\r\nContent-Length: 10\r\n\r\nshort",
        b"SIP/2.0 200 OK\r\nX: \xff\xfe\r\n\r\n",
    ],
)
def test_malformed_messages_are_refused(raw: bytes) -> None:
    with pytest.raises(SipParseError):
        parse_message(raw)


def test_missing_required_header_names_it() -> None:
    msg = parse_message(b"SIP/2.0 200 OK\r\n\r\n")
    with pytest.raises(SipParseError, match="CSeq"):
        _ = msg.cseq


def test_split_stream_frames_by_content_length() -> None:
    one = serialize(
        SipResponse(headers=(("CSeq", "1 INVITE"),), body=b"abc", status=200, reason="OK")
    )
    messages, rest = split_stream(b"\r\n" + one + one + one[:10])
    assert messages == [one, one]
    assert rest == one[:10]
    messages, rest = split_stream(rest + one[10:])
    assert messages == [one] and rest == b""


@pytest.mark.parametrize(
    ("value", "name", "expected"),
    [
        ('"Bob" <sip:b@x;transport=tcp>;tag=99', "tag", "99"),
        ("<sip:b@x;tag=inside>", "tag", None),
        ("SIP/2.0/UDP h:1;branch=z9hG4bKq;rport", "branch", "z9hG4bKq"),
        ("SIP/2.0/UDP h:1;received=1.2.3.4", "RECEIVED", "1.2.3.4"),
    ],
)
def test_header_params(value: str, name: str, expected: str | None) -> None:
    assert header_param(value, name) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('"Bob" <sip:b@x:5060>;tag=1', "sip:b@x:5060"),
        ("<sip:cell@127.0.0.1:5070;transport=tcp>", "sip:cell@127.0.0.1:5070;transport=tcp"),
        ("sip:b@x;tag=2", "sip:b@x"),
    ],
)
def test_uri_of_name_addr(value: str, expected: str) -> None:
    assert uri_of(value) == expected
