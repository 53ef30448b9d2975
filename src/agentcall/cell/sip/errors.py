"""Errors of the SIP user agent, one rooted tree; each class says how to fix it.

::

    SipError                         root: unexpected failure in the SIP stack
    ├── SipParseError                a peer sent a malformed SIP message or SDP body
    ├── SipAuthError                 a 401/407 challenge that cannot be answered
    ├── SipConfigError               the trunk configuration is not usable for a real call
    ├── SipTransportError            the socket to the trunk failed
    └── IllegalCallTransitionError   a call event that its current state forbids

The cell maps every one of them to a ``failed`` call with a reason code
(:func:`cell.sip.outcome.reason_for_error`); none ever escapes a call task.
"""

from __future__ import annotations


class SipError(Exception):
    """Unexpected failure in the SIP stack; read the cell log (call_id) for the cause."""

    reason_code = "sip_error"


class SipParseError(SipError):
    """The peer sent a message this UA cannot parse; capture it (sipp -trace_msg) and
    check the trunk speaks RFC 3261 over the configured transport."""

    reason_code = "sip_malformed"


class SipAuthError(SipError):
    """The trunk asked for digest credentials this cell cannot give: configure the
    credentials of the trunk's credential_ref (docs/cell-sip.md) or use MD5/SHA-256
    with qop=auth."""

    reason_code = "sip_auth_failed"


class SipConfigError(SipError):
    """The trunk snapshot lacks what a real call needs (transport, auth_mode, host,
    PCMA media profile): fix the approved SIP snapshot."""

    reason_code = "trunk_not_usable"


class SipTransportError(SipError):
    """The socket to the trunk failed: check server_host/server_port/transport and that
    the trunk is reachable from the cell."""

    reason_code = "sip_transport_error"


class IllegalCallTransitionError(SipError):
    """A call event arrived in a state that forbids it: a bug in the UA, report it."""

    reason_code = "sip_internal_error"
