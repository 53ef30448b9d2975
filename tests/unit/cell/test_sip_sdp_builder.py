"""SDP offer/answer for PCMA/8000 and the requests of an outgoing call."""

from __future__ import annotations

import pytest

from agentcall.cell.domain.errors import SipParseError
from agentcall.cell.sip.builder import (
    Leg,
    dialog_from_success,
    make_ack_for_failure,
    make_cancel,
    make_in_dialog,
    make_invite,
    make_response,
    sip_user,
)
from agentcall.cell.sip.message import SipRequest, parse_message, serialize, tag_of
from agentcall.cell.sip.sdp import MediaOffer, RemoteMedia, build_offer, parse_answer

LEG = Leg(
    call_id="c1@cell",
    local_tag="lt",
    caller_id="BD00000000",
    callee="15003164745",
    dial_prefix="9",
    server_host="127.0.0.1",
    server_port=5080,
    transport="udp",
    local_host="127.0.0.1",
    local_port=5070,
)


def test_offer_lists_pcma_and_telephone_event() -> None:
    sdp = build_offer(MediaOffer(address="127.0.0.1", port=40000, session_id=7)).decode()
    assert "m=audio 40000 RTP/AVP 8 101\r\n" in sdp
    assert "a=rtpmap:8 PCMA/8000" in sdp and "a=rtpmap:101 telephone-event/8000" in sdp


ANSWER = (
    "v=0\r\no=- 1 1 IN IP4 10.0.0.9\r\ns=-\r\nc=IN IP4 10.0.0.9\r\nt=0 0\r\n"
    "m=audio 6000 RTP/AVP 8 101\r\na=rtpmap:8 PCMA/8000\r\n"
    "a=rtpmap:101 telephone-event/8000\r\na=sendrecv\r\n"
)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (ANSWER, RemoteMedia("10.0.0.9", 6000, 8, 101, "sendrecv")),
        (
            "v=0\r\nc=IN IP4 1.1.1.1\r\nm=audio 7000 RTP/AVP 8\r\n"
            "c=IN IP4 2.2.2.2\r\na=recvonly\r\n",
            RemoteMedia("2.2.2.2", 7000, 8, None, "recvonly"),
        ),
    ],
)
def test_parse_answer(body: str, expected: RemoteMedia) -> None:
    assert parse_answer(body.encode()) == expected


@pytest.mark.parametrize(
    "body",
    [
        "v=0\r\nc=IN IP4 1.1.1.1\r\nm=audio 7000 RTP/AVP 0\r\n",  # PCMU only
        "v=0\r\nc=IN IP4 1.1.1.1\r\nm=audio 0 RTP/AVP 8\r\n",  # stream refused
        "v=0\r\nc=IN IP4 1.1.1.1\r\nm=video 7000 RTP/AVP 8\r\n",
        "v=0\r\nm=audio 7000 RTP/AVP 8\r\n",  # no address
        "v=0\r\nc=IN IP4 1.1.1.1\r\nm=audio 7000 RTP/AVP 8\r\na=rtpmap:8 PCMU/8000\r\n",
    ],
)
def test_unacceptable_answers(body: str) -> None:
    with pytest.raises(SipParseError):
        parse_answer(body.encode())


@pytest.mark.parametrize(
    ("raw", "user"),
    [("BD00000000", "BD00000000"), ("+8613800", "+8613800"), ("a b@c", "a%20b%40c")],
)
def test_caller_id_kept_raw(raw: str, user: str) -> None:
    assert sip_user(raw) == user


def test_invite_carries_prefix_raw_caller_and_sdp() -> None:
    invite = make_invite(LEG, branch="z9hG4bK1", cseq=1, sdp=b"v=0\r\n")
    assert invite.uri == "sip:915003164745@127.0.0.1:5080"
    assert invite.require("From") == "<sip:BD00000000@127.0.0.1>;tag=lt"
    assert invite.require("Via") == "SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bK1;rport"
    assert parse_message(serialize(invite)) == invite.with_header("Content-Length", "5")


def test_tcp_leg_marks_transport() -> None:
    tcp = Leg(**{**LEG.__dict__, "transport": "tcp"})
    invite = make_invite(tcp, branch="z9hG4bK1", cseq=1, sdp=b"")
    assert invite.uri.endswith(";transport=tcp") and "SIP/2.0/TCP" in invite.require("Via")


def test_cancel_and_failure_ack_reuse_the_invite_transaction() -> None:
    invite = make_invite(LEG, branch="z9hG4bKinv", cseq=3, sdp=b"")
    cancel = make_cancel(invite)
    assert (cancel.method, cancel.uri, cancel.require("CSeq")) == ("CANCEL", invite.uri, "3 CANCEL")
    assert cancel.require("Via") == invite.require("Via")
    resp = make_response(invite, 487, "Request Terminated")
    resp = resp.__class__(
        headers=tuple((k, v + ";tag=rt" if k == "To" else v) for k, v in resp.headers),
        body=b"",
        status=487,
        reason="Request Terminated",
    )
    ack = make_ack_for_failure(invite, resp)
    assert ack.require("CSeq") == "3 ACK" and tag_of(ack.require("To")) == "rt"
    assert ack.require("Via") == invite.require("Via")


def test_in_dialog_requests_follow_contact_and_route_set() -> None:
    ok = parse_message(
        b"SIP/2.0 200 OK\r\nTo: <sip:x@h>;tag=peer\r\nContact: <sip:uas@10.0.0.2:5090>\r\n"
        b"Record-Route: <sip:p1;lr>\r\nRecord-Route: <sip:p2;lr>\r\nCSeq: 1 INVITE\r\n\r\n"
    )
    assert not isinstance(ok, SipRequest)
    dialog = dialog_from_success(ok, LEG)
    bye = make_in_dialog("BYE", LEG, dialog, branch="z9hG4bK2", cseq=2)
    assert bye.uri == "sip:uas@10.0.0.2:5090"
    assert bye.header_all("Route") == ["<sip:p2;lr>", "<sip:p1;lr>"]
    assert tag_of(bye.require("To")) == "peer" and bye.require("CSeq") == "2 BYE"
    ack = make_in_dialog("ACK", LEG, dialog, branch="z9hG4bK3", cseq=1)
    assert ack.require("CSeq") == "1 ACK" and ack.header("User-Agent") is None
