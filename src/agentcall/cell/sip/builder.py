"""Build the requests and responses of an outgoing call (RFC 3261 §8.1, §9, §12-15).

Pure: every identifier (Call-ID, tags, branches, CSeq) is passed in, so the same
inputs give the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from agentcall.cell.sip.message import SipRequest, SipResponse, tag_of, uri_of

BRANCH_MAGIC = "z9hG4bK"  # RFC 3261 §8.1.1.7
USER_AGENT = "agentcall-cell"
_USER_SAFE = "-_.!~*'()&=+$,;?/"  # unreserved + user-unreserved (RFC 3261 §25.1)


def sip_user(raw: str) -> str:
    """A user part for a SIP URI: the raw value, with only forbidden characters escaped
    (``BD00000000`` stays ``BD00000000``; never cleaned to digits)."""
    return quote(raw, safe=_USER_SAFE)


@dataclass(frozen=True)
class Leg:
    """Fixed facts of one outgoing call."""

    call_id: str
    local_tag: str
    caller_id: str  # raw, from the caller profile
    callee: str  # raw number from the command
    dial_prefix: str
    server_host: str
    server_port: int
    transport: str  # "udp" | "tcp"
    local_host: str
    local_port: int

    @property
    def request_uri(self) -> str:
        uri = (
            f"sip:{sip_user(self.dial_prefix + self.callee)}@{self.server_host}:{self.server_port}"
        )
        return uri + (";transport=tcp" if self.transport == "tcp" else "")

    @property
    def from_header(self) -> str:
        return f"<sip:{sip_user(self.caller_id)}@{self.server_host}>;tag={self.local_tag}"

    @property
    def to_header(self) -> str:
        return f"<sip:{sip_user(self.dial_prefix + self.callee)}@{self.server_host}>"

    @property
    def contact(self) -> str:
        suffix = ";transport=tcp" if self.transport == "tcp" else ""
        return f"<sip:cell@{self.local_host}:{self.local_port}{suffix}>"

    def via(self, branch: str) -> str:
        return (
            f"SIP/2.0/{self.transport.upper()} {self.local_host}:{self.local_port}"
            f";branch={branch};rport"
        )


@dataclass(frozen=True)
class Dialog:
    """What the 2xx taught us: the peer's tag, target and route set."""

    remote_tag: str
    remote_target: str
    route_set: tuple[str, ...]
    to_header: str


def make_invite(
    leg: Leg,
    *,
    branch: str,
    cseq: int,
    sdp: bytes,
    auth: tuple[str, str] | None = None,
) -> SipRequest:
    headers = [
        ("Via", leg.via(branch)),
        ("Max-Forwards", "70"),
        ("From", leg.from_header),
        ("To", leg.to_header),
        ("Call-ID", leg.call_id),
        ("CSeq", f"{cseq} INVITE"),
        ("Contact", leg.contact),
        ("Allow", "INVITE, ACK, CANCEL, BYE, OPTIONS"),
        ("User-Agent", USER_AGENT),
        ("Content-Type", "application/sdp"),
    ]
    if auth is not None:
        headers.append(auth)
    return SipRequest(headers=tuple(headers), body=sdp, method="INVITE", uri=leg.request_uri)


def _copy(request: SipRequest, *names: str) -> list[tuple[str, str]]:
    return [(name, value) for name in names for value in request.header_all(name)]


def make_cancel(invite: SipRequest) -> SipRequest:
    """CANCEL of ``invite``: same Request-URI, top Via, Call-ID, From, To, CSeq number."""
    number, _ = invite.cseq
    headers = [
        ("Via", invite.header_all("Via")[0]),
        ("Max-Forwards", "70"),
        *_copy(invite, "From", "To", "Call-ID"),
        ("CSeq", f"{number} CANCEL"),
        *_copy(invite, "Route"),
        ("User-Agent", USER_AGENT),
    ]
    return SipRequest(headers=tuple(headers), body=b"", method="CANCEL", uri=invite.uri)


def make_ack_for_failure(invite: SipRequest, response: SipResponse) -> SipRequest:
    """ACK of a non-2xx final answer: part of the INVITE transaction (same branch)."""
    number, _ = invite.cseq
    headers = [
        ("Via", invite.header_all("Via")[0]),
        ("Max-Forwards", "70"),
        *_copy(invite, "From"),
        ("To", response.header("To") or invite.require("To")),
        *_copy(invite, "Call-ID"),
        ("CSeq", f"{number} ACK"),
        *_copy(invite, "Route"),
    ]
    return SipRequest(headers=tuple(headers), body=b"", method="ACK", uri=invite.uri)


def dialog_from_success(response: SipResponse, leg: Leg) -> Dialog:
    to_header = response.require("To")
    contact = response.header("Contact")
    routes = tuple(reversed(response.header_all("Record-Route")))
    return Dialog(
        remote_tag=tag_of(to_header) or "",
        remote_target=uri_of(contact) if contact else leg.request_uri,
        route_set=routes,
        to_header=to_header,
    )


def make_in_dialog(method: str, leg: Leg, dialog: Dialog, *, branch: str, cseq: int) -> SipRequest:
    """ACK (for a 2xx: its own transaction) or BYE inside the confirmed dialog."""
    headers = [
        ("Via", leg.via(branch)),
        ("Max-Forwards", "70"),
        ("From", leg.from_header),
        ("To", dialog.to_header),
        ("Call-ID", leg.call_id),
        ("CSeq", f"{cseq} {method}"),
        *[("Route", route) for route in dialog.route_set],
    ]
    if method != "ACK":
        headers.append(("User-Agent", USER_AGENT))
    return SipRequest(headers=tuple(headers), body=b"", method=method, uri=dialog.remote_target)


def make_response(request: SipRequest, status: int, reason: str) -> SipResponse:
    """Answer a request from the peer (its BYE, an OPTIONS): echo Via/From/To/Call-ID/CSeq."""
    headers = _copy(request, "Via", "From", "To", "Call-ID", "CSeq")
    headers.append(("User-Agent", USER_AGENT))
    return SipResponse(headers=tuple(headers), body=b"", status=status, reason=reason)
