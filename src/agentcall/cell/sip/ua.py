"""One outgoing SIP call: INVITE → (auth) → 1xx → 2xx/ACK → media → BYE, or CANCEL.

:class:`SipCall` is the thin I/O shell around the pure :func:`agentcall.cell.sip.dialog.step`:
incoming messages and timers become events, the actions it returns are sent.
Over UDP requests are retransmitted on RFC 3261 timers (T1 doubling to T2);
over TCP they are sent once.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentcall.cell.domain.errors import IllegalCallTransitionError, SipAuthError, SipError
from agentcall.cell.media.recording import CallRecorder
from agentcall.cell.media.session import CallAudio, MediaClock, MediaReport, MediaSession
from agentcall.cell.recording.wav import WavWriter
from agentcall.cell.sip import builder
from agentcall.cell.sip.dialog import Action, DialogState, Event, EventKind, Phase, step
from agentcall.cell.sip.digest import Credentials, authorization, parse_challenge
from agentcall.cell.sip.message import SipMessage, SipRequest, SipResponse
from agentcall.cell.sip.outcome import CallEnd, outcome_for_error
from agentcall.cell.sip.sdp import MediaOffer, build_offer, parse_answer
from agentcall.cell.sip.transport import Address, SipEndpoint

log = logging.getLogger("cell.sip.ua")


@dataclass(frozen=True)
class SipTimers:
    t1: float = 0.5
    t2: float = 4.0
    transaction: float = 32.0  # Timer B / F: 64 * T1
    linger: float = 4.0  # keep answering retransmissions after the end


@dataclass(frozen=True)
class SipCallPlan:
    call_id: str
    caller_id: str
    callee: str
    dial_prefix: str
    server_host: str
    server_port: int
    ring_timeout_ms: int
    max_duration_ms: int
    credentials: Credentials | None = None
    payload_type: int = 8
    rtp_timeout_ms: int = 10_000


class CallObserver(Protocol):
    def ringing(self) -> None: ...

    def answered(self) -> None: ...


@dataclass(frozen=True)
class CallReport:
    end: CallEnd
    answered: bool
    talk_ms: int
    media: MediaReport | None
    recorded_ms: int


def new_id() -> str:
    return secrets.token_hex(8)


@dataclass
class _Requests:
    invite: SipRequest | None = None
    last_response: SipResponse | None = None
    success: SipResponse | None = None
    peer_bye: SipRequest | None = None
    dialog: builder.Dialog | None = None
    cseq: int = 1
    retransmits: dict[str, asyncio.Task[None]] = field(default_factory=dict)


class SipCall:
    """Run with ``await call.run()``; ``hangup()`` and ``agent_done()`` end it early."""

    def __init__(
        self,
        plan: SipCallPlan,
        endpoint: SipEndpoint,
        clock: MediaClock,
        audio: CallAudio,
        observer: CallObserver,
        *,
        timers: SipTimers | None = None,
        open_recording: Callable[[], WavWriter] | None = None,
    ) -> None:
        self._open_recording = open_recording
        self.plan = plan
        self.endpoint = endpoint
        self.timers = timers or SipTimers()
        self.observer = observer
        self.state = DialogState()
        self.addr: Address = (plan.server_host, plan.server_port)
        self.req = _Requests()
        self._events: asyncio.Queue[Event] = asyncio.Queue()
        self._handles: dict[str, asyncio.TimerHandle] = {}
        self._recorder: CallRecorder | None = None  # created at answer: no answer, no file
        self.media = MediaSession(
            clock,
            audio,
            payload_type=plan.payload_type,
            rtp_timeout_s=plan.rtp_timeout_ms / 1000,
            on_timeout=lambda: self._post(Event(EventKind.RTP_TIMEOUT)),
        )
        self._answered_at: float | None = None
        self._ended_at: float | None = None
        self.leg: builder.Leg | None = None
        self._sdp = b""

    # -- inputs ---------------------------------------------------------------
    def hangup(self) -> None:
        self._post(Event(EventKind.HANGUP))

    def agent_done(self) -> None:
        self._post(Event(EventKind.AGENT_DONE))

    def _post(self, event: Event) -> None:
        self._events.put_nowait(event)

    def _later(self, name: str, delay: float, event: Event) -> None:
        loop = asyncio.get_running_loop()
        self._cancel_timer(name)
        self._handles[name] = loop.call_later(delay, self._post, event)

    def _cancel_timer(self, name: str) -> None:
        handle = self._handles.pop(name, None)
        if handle is not None:
            handle.cancel()

    def _on_message(self, message: SipMessage, addr: Address) -> None:
        if isinstance(message, SipRequest):
            self._on_request(message)
            return
        number, method = message.cseq
        if method == "INVITE":
            self._on_invite_response(message)
        elif method == "BYE" and message.status >= 200:
            self._stop_retransmit("BYE")
            self._post(Event(EventKind.BYE_DONE))
        elif method == "CANCEL" and message.status >= 200:
            self._stop_retransmit("CANCEL")

    def _on_invite_response(self, response: SipResponse) -> None:
        self._stop_retransmit("INVITE")
        self.req.last_response = response
        status = response.status
        if status < 200:
            self._cancel_timer("timer_b")
            self._post(Event(EventKind.PROVISIONAL, status))
            return
        self._stop_retransmit("CANCEL")
        self._cancel_timer("timer_b")
        if status < 300:
            self.req.success = response
            self._post(Event(EventKind.SUCCESS, status))
            return
        if self.req.invite is not None:  # ACK every non-2xx final, retransmissions too
            ack = builder.make_ack_for_failure(self.req.invite, response)
            asyncio.get_running_loop().create_task(self._send(ack))
        self._post(Event(EventKind.FAILURE, status))

    def _on_request(self, request: SipRequest) -> None:
        if request.method == "BYE":
            self.req.peer_bye = request
            self._post(Event(EventKind.REMOTE_BYE))
        elif request.method not in ("ACK", "CANCEL"):
            reply = builder.make_response(request, 200 if request.method == "OPTIONS" else 405, "")
            asyncio.get_running_loop().create_task(self._send(reply))

    # -- outputs --------------------------------------------------------------
    async def _send(self, message: SipMessage) -> None:
        try:
            await self.endpoint.send(message, self.addr)
        except SipError as exc:
            log.warning("call %s: send failed: %s", self.plan.call_id, exc)

    def _retransmit(self, key: str, message: SipRequest) -> None:
        self._stop_retransmit(key)
        self.req.retransmits[key] = asyncio.get_running_loop().create_task(
            self._retransmit_loop(message)
        )

    async def _retransmit_loop(self, message: SipRequest) -> None:
        await self.endpoint.send(message, self.addr)
        if self.endpoint.reliable:
            return
        interval = self.timers.t1
        while True:
            await asyncio.sleep(interval)
            await self._send(message)
            interval = min(interval * 2, self.timers.t2)

    def _stop_retransmit(self, key: str) -> None:
        task = self.req.retransmits.pop(key, None)
        if task is not None:
            task.cancel()

    # -- the call -------------------------------------------------------------
    async def run(self) -> CallReport:
        self.endpoint.register(self.plan.call_id, self._on_message)
        try:
            await self._dial()
            while self.state.phase is not Phase.ENDED:
                await self._apply(await self._events.get())
        except SipError as exc:
            self._fail(exc)
        finally:
            await self._cleanup()
        return self._report()

    async def _dial(self) -> None:
        plan = self.plan
        await self.endpoint.prepare(self.addr)
        port = await self.media.open(self.endpoint.local_host)
        host = self.endpoint.public_host
        self.leg = builder.Leg(
            call_id=plan.call_id,
            local_tag=new_id(),
            caller_id=plan.caller_id,
            callee=plan.callee,
            dial_prefix=plan.dial_prefix,
            server_host=plan.server_host,
            server_port=plan.server_port,
            transport=self.endpoint.transport,
            local_host=host,
            local_port=self.endpoint.local_port,
        )
        offer = MediaOffer(address=host, port=port, session_id=secrets.randbelow(1 << 31))
        self._sdp = build_offer(offer)
        self._later("ring", plan.ring_timeout_ms / 1000, Event(EventKind.RING_TIMEOUT))
        self._send_invite(None)

    def _send_invite(self, auth: tuple[str, str] | None) -> None:
        assert self.leg is not None
        invite = builder.make_invite(
            self.leg,
            branch=builder.BRANCH_MAGIC + new_id(),
            cseq=self.req.cseq,
            sdp=self._sdp,
            auth=auth,
        )
        self.req.invite = invite
        self._retransmit("INVITE", invite)
        self._later("timer_b", self.timers.transaction, Event(EventKind.INVITE_TIMEOUT))

    async def _apply(self, event: Event) -> None:
        try:
            result = step(self.state, event)
        except IllegalCallTransitionError:
            log.exception("call %s: ignored event %s", self.plan.call_id, event.kind)
            return
        self.state = result.state
        for action in result.actions:
            await self._ACTIONS[action](self)

    def _fail(self, exc: SipError) -> None:
        log.warning("call %s failed: %s", self.plan.call_id, exc)
        if self.state.phase is not Phase.ENDED:
            self.state = DialogState(phase=Phase.ENDED, end=outcome_for_error(exc.reason_code))

    async def _cleanup(self) -> None:
        for key in list(self.req.retransmits):
            self._stop_retransmit(key)
        for name in list(self._handles):
            self._cancel_timer(name)
        self.media.stop()
        loop = asyncio.get_running_loop()
        loop.call_later(self.timers.linger, self.endpoint.unregister, self.plan.call_id)

    def _report(self) -> CallReport:
        end = self.state.end or outcome_for_error("sip_internal_error")
        talk = 0.0
        if self._answered_at is not None:
            ended = self._ended_at or asyncio.get_running_loop().time()
            talk = ended - self._answered_at
        recorded = 0
        if self._recorder is not None:
            self._recorder.close()
            recorded = self._recorder.duration_ms
        media = self.media.report() if self._answered_at is not None else None
        return CallReport(end, self._answered_at is not None, int(talk * 1000), media, recorded)

    # -- actions --------------------------------------------------------------
    async def _retry_with_auth(self) -> None:
        response, invite = self.req.last_response, self.req.invite
        assert response is not None and invite is not None
        if self.plan.credentials is None:
            raise SipAuthError(
                f"trunk asked for authentication ({response.status}) "
                "but no credentials are configured"
            )
        header = "WWW-Authenticate" if response.status == 401 else "Proxy-Authenticate"
        challenge = parse_challenge(response.require(header))
        value = authorization(
            challenge, self.plan.credentials, "INVITE", invite.uri, cnonce=new_id()
        )
        self.req.cseq += 1
        name = "Authorization" if response.status == 401 else "Proxy-Authorization"
        self._send_invite((name, value))

    async def _send_cancel(self) -> None:
        assert self.req.invite is not None
        self._retransmit("CANCEL", builder.make_cancel(self.req.invite))
        self._later("timer_b", self.timers.transaction, Event(EventKind.INVITE_TIMEOUT))

    async def _send_ack(self) -> None:
        assert self.leg is not None and self.req.success is not None
        if self.req.dialog is None:
            self.req.dialog = builder.dialog_from_success(self.req.success, self.leg)
        ack = builder.make_in_dialog(
            "ACK",
            self.leg,
            self.req.dialog,
            branch=builder.BRANCH_MAGIC + new_id(),
            cseq=self.req.cseq,
        )
        await self._send(ack)

    async def _send_bye(self) -> None:
        assert self.leg is not None and self.req.dialog is not None
        self.req.cseq += 1
        bye = builder.make_in_dialog(
            "BYE",
            self.leg,
            self.req.dialog,
            branch=builder.BRANCH_MAGIC + new_id(),
            cseq=self.req.cseq,
        )
        self._retransmit("BYE", bye)
        self._later("timer_f", self.timers.transaction, Event(EventKind.BYE_DONE))

    async def _answer_bye(self) -> None:
        if self.req.peer_bye is not None:
            await self._send(builder.make_response(self.req.peer_bye, 200, "OK"))

    async def _refuse_bye(self) -> None:
        if self.req.peer_bye is not None:
            reply = builder.make_response(self.req.peer_bye, 481, "Call Does Not Exist")
            await self._send(reply)

    async def _start_media(self) -> None:
        assert self.req.success is not None
        self._cancel_timer("ring")
        self._answered_at = asyncio.get_running_loop().time()
        self._later("max", self.plan.max_duration_ms / 1000, Event(EventKind.MAX_DURATION))
        try:
            remote = parse_answer(self.req.success.body, self.plan.payload_type)
        except SipError as exc:
            log.warning("call %s: unusable SDP answer: %s", self.plan.call_id, exc)
            self._post(Event(EventKind.MEDIA_FAILED))
            return
        self.media.accept_telephone_events(remote.telephone_event)
        if self._open_recording is not None:
            self._recorder = CallRecorder(self._open_recording())
            self.media.recorder = self._recorder
        self.media.start((remote.address, remote.port))

    async def _stop_media(self) -> None:
        self._ended_at = asyncio.get_running_loop().time()
        self.media.stop()

    async def _report_ringing(self) -> None:
        self.observer.ringing()

    async def _report_answered(self) -> None:
        self.observer.answered()

    async def _report_ended(self) -> None:
        if self._ended_at is None and self._answered_at is not None:
            self._ended_at = asyncio.get_running_loop().time()

    _ACTIONS: dict[Action, Callable[[SipCall], Coroutine[Any, Any, None]]] = {}


SipCall._ACTIONS = {
    Action.RETRY_WITH_AUTH: SipCall._retry_with_auth,
    Action.SEND_CANCEL: SipCall._send_cancel,
    Action.SEND_ACK: SipCall._send_ack,
    Action.SEND_BYE: SipCall._send_bye,
    Action.ANSWER_BYE: SipCall._answer_bye,
    Action.REFUSE_BYE: SipCall._refuse_bye,
    Action.START_MEDIA: SipCall._start_media,
    Action.STOP_MEDIA: SipCall._stop_media,
    Action.REPORT_RINGING: SipCall._report_ringing,
    Action.REPORT_ANSWERED: SipCall._report_answered,
    Action.REPORT_ENDED: SipCall._report_ended,
}
