"""The RTP stream of one answered call, driven by a shared 20 ms media clock.

Every tick a session sends one PCMA frame (agent speech or silence), plays one
frame out of its jitter buffer to the agent, and records the mix of both. The
clock keeps an absolute schedule, so a slow tick is followed by catch-up ticks
rather than drift; ticks run more than ``LATE_TICK_S`` behind are counted late, and
a fall of more than ``STALL_S`` behind is a stall. RFC 4733 telephone-events go to
the agent's ``on_dtmf`` (one call per key press).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from agentcall.cell.domain.errors import SipParseError
from agentcall.cell.media import g711
from agentcall.cell.media.dtmf import EventReader
from agentcall.cell.media.jitter import JitterBuffer, ReceiveStats, on_packet
from agentcall.cell.media.recording import CallRecorder
from agentcall.cell.media.rtp import (
    FRAME_MS,
    PCM_BYTES_PER_FRAME,
    SendState,
    parse_rtp,
    serialize_rtp,
)

log = logging.getLogger("cell.media")

TICK_S = FRAME_MS / 1000
LATE_TICK_S = 0.010
STALL_S = 0.060  # a tick this late means the clock stalled (3 frames behind)
SILENCE_PCM = bytes(PCM_BYTES_PER_FRAME)
SILENCE_ALAW = bytes([g711.SILENCE_BYTE]) * (PCM_BYTES_PER_FRAME // 2)
Address = tuple[str, int]


class CallAudio(Protocol):
    """What the voice agent offers the media stream (16-bit PCM, 8 kHz, 20 ms frames)."""

    def next_outbound(self) -> bytes | None: ...  # None: nothing to say (silence)

    def on_inbound(self, pcm: bytes | None) -> None: ...  # None: nothing heard this tick


@dataclass(frozen=True)
class MediaReport:
    sent: int
    received: int
    expected: int
    lost: int
    late: int
    concealed: int
    jitter_ms: float
    late_ticks: int
    ticks: int
    other_payloads: int
    stalls: int = 0  # times the media clock fell more than STALL_S behind
    max_lag_ms: float = 0.0  # how far behind it fell at worst
    dtmf_events: int = 0


class MediaClock:
    """One timer for every live session of the cell."""

    def __init__(self) -> None:
        self.sessions: set[MediaSession] = set()
        self.ticks = 0
        self.late_ticks = 0
        self._task: asyncio.Task[None] | None = None

    def add(self, session: MediaSession) -> None:
        self.sessions.add(session)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="media-clock")

    def remove(self, session: MediaSession) -> None:
        self.sessions.discard(session)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        due = loop.time()
        while self.sessions:
            due += TICK_S
            delay = due - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            lag = loop.time() - due
            late = lag > LATE_TICK_S
            self.ticks += 1
            self.late_ticks += late
            for session in list(self.sessions):
                session.tick(late, lag)

    async def stop(self) -> None:
        self.sessions.clear()
        if self._task is not None:
            self._task.cancel()


class MediaSession(asyncio.DatagramProtocol):
    """RTP socket + jitter buffer + recorder of one call."""

    def __init__(
        self,
        clock: MediaClock,
        audio: CallAudio,
        *,
        recorder: CallRecorder | None = None,
        payload_type: int = 8,
        telephone_event: int = 101,
        rtp_timeout_s: float = 10.0,
        on_timeout: Callable[[], None] | None = None,
    ) -> None:
        self.clock = clock
        self.audio = audio
        self.recorder = recorder
        self.payload_type = payload_type
        self.rtp_timeout_s = rtp_timeout_s
        self.on_timeout = on_timeout
        self.telephone_events = frozenset({telephone_event})
        self.dtmf = EventReader()
        self.dtmf_events = 0
        self.stalls = 0
        self.max_lag_s = 0.0
        self._stalled = False
        self.jitter = JitterBuffer()
        self.stats = ReceiveStats()
        self.send_state = SendState(
            ssrc=random.getrandbits(32),
            sequence=random.getrandbits(16),
            timestamp=random.getrandbits(32),
            payload_type=payload_type,
        )
        self.sent = 0
        self.late_ticks = 0
        self.ticks = 0
        self.other_payloads = 0
        self.remote: Address | None = None
        self.local_port = 0
        self._transport: asyncio.DatagramTransport | None = None
        self._last_rx = 0.0
        self._timed_out = False

    async def open(self, host: str) -> int:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(lambda: self, local_addr=(host, 0))
        self._transport = transport
        self.local_port = int(transport.get_extra_info("sockname")[1])
        return self.local_port

    def start(self, remote: Address) -> None:
        self.remote = remote
        self._last_rx = asyncio.get_running_loop().time()
        self.clock.add(self)

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        try:
            packet = parse_rtp(data)
        except SipParseError:
            self.other_payloads += 1
            return
        if packet.payload_type in self.telephone_events:
            self._on_event(packet.ssrc, packet.timestamp, packet.payload)
            return
        if packet.payload_type != self.payload_type:
            self.other_payloads += 1  # comfort noise, another codec: not audio
            return
        now = asyncio.get_running_loop().time()
        self._last_rx = now
        self.stats = on_packet(self.stats, packet.sequence, packet.timestamp, now)
        self.jitter.push(packet.sequence, packet.payload)

    def accept_telephone_events(self, payload_type: int | None) -> None:
        """Also read telephone-events on the payload type the peer's answer names."""
        if payload_type is not None:
            self.telephone_events = self.telephone_events | {payload_type}

    def _on_event(self, ssrc: int, timestamp: int, payload: bytes) -> None:
        self.dtmf, key = self.dtmf.step(ssrc, timestamp, payload)
        if key is None:
            return
        self.dtmf_events += 1
        on_dtmf = getattr(self.audio, "on_dtmf", None)
        if on_dtmf is not None:
            on_dtmf(key)

    def tick(self, late: bool, lag_s: float = 0.0) -> None:
        self.ticks += 1
        self.late_ticks += late
        self.max_lag_s = max(self.max_lag_s, lag_s)
        stalled = lag_s > STALL_S
        self.stalls += stalled and not self._stalled
        self._stalled = stalled
        spoken = self.audio.next_outbound()
        payload = g711.encode(spoken) if spoken else SILENCE_ALAW
        packet, self.send_state = self.send_state.next(payload)
        if self._transport is not None and self.remote is not None:
            self._transport.sendto(serialize_rtp(packet), self.remote)
            self.sent += 1
        frame = self.jitter.pop()
        heard = g711.decode(frame) if frame else None
        self.audio.on_inbound(heard)
        if self.recorder is not None:
            self.recorder.tick(spoken, heard, PCM_BYTES_PER_FRAME)
        self._check_timeout()

    def _check_timeout(self) -> None:
        if self._timed_out or self.on_timeout is None:
            return
        if asyncio.get_running_loop().time() - self._last_rx > self.rtp_timeout_s:
            self._timed_out = True
            log.info("no RTP for %.1f s: ending the call", self.rtp_timeout_s)
            self.on_timeout()

    def stop(self) -> None:
        self.clock.remove(self)
        if self._transport is not None:
            self._transport.close()
            self._transport = None

    def report(self) -> MediaReport:
        return MediaReport(
            sent=self.sent,
            received=self.stats.received,
            expected=self.stats.expected,
            lost=self.stats.lost,
            late=self.jitter.late,
            concealed=self.jitter.concealed,
            jitter_ms=round(self.stats.jitter_ms, 3),
            late_ticks=self.late_ticks,
            ticks=self.ticks,
            other_payloads=self.other_payloads,
            stalls=self.stalls,
            max_lag_ms=round(self.max_lag_s * 1000, 1),
            dtmf_events=self.dtmf_events,
        )
