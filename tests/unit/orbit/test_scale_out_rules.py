"""Pure pieces of scaling out (docs/orbit/scaling.md): which registrations are hinted and which
are forgotten, the hint datagram (coalesced, bounded, hostile input ignored), the worker's
failover order over several server URLs, and the settings that name them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentcall.orbit.domain.peers import (
    MAGIC,
    MAX_DATAGRAM,
    Registration,
    decode,
    encode,
    forgotten,
    live_peers,
    plan_sends,
)
from agentcall.orbit.domain.tokens import generate_secret
from agentcall.orbit.sdk.settings import ENV_QUEUES, ENV_TOKEN, ENV_URL, worker_settings
from agentcall.orbit.sdk.worker.link import next_server, split_urls
from agentcall.orbit.settings import from_environ, to_environ

pytestmark = pytest.mark.unit

NOW = datetime(2026, 1, 1, tzinfo=UTC)
Q1, Q2, Q3 = "1" * 32, "2" * 32, "3" * 32


def reg(server_id: str, port: int, age_s: float, host: str = "127.0.0.1") -> Registration:
    return Registration(server_id, host, port, NOW - timedelta(seconds=age_s))


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([], ()),
        ([reg("me", 1, 0)], ()),  # never itself
        ([reg("me", 1, 0), reg("b", 2, 0.5)], (("127.0.0.1", 2),)),
        ([reg("b", 2, 4.9), reg("c", 3, 5.1)], (("127.0.0.1", 2),)),  # c missed its heartbeats
        ([reg("b", 2, 0), reg("b2", 2, 1)], (("127.0.0.1", 2),)),  # a restart's old row: once
        ([reg("b", 0, 0), reg("c", 70000, 0)], ()),  # no usable port
        (
            [reg("c", 3, 0, "10.0.0.3"), reg("b", 9, 0, "10.0.0.2")],
            (("10.0.0.2", 9), ("10.0.0.3", 3)),
        ),  # stable order
    ],
)
def test_live_peers_are_the_others_renewed_within_the_expiry(
    rows: list[Registration], expected: tuple[tuple[str, int], ...]
) -> None:
    assert live_peers(rows, "me", NOW) == expected


def test_long_dead_registrations_are_forgotten() -> None:
    rows = [reg("a", 1, 0), reg("b", 2, 59), reg("c", 3, 61), reg("d", 4, 3600)]
    assert forgotten(rows, NOW) == ["c", "d"]


@pytest.mark.parametrize(
    ("queues", "expected"),
    [
        ([], []),
        ([Q2, Q1, Q2], [MAGIC + b" " + Q1.encode() + b" " + Q2.encode()]),  # sorted, once
        (["not-a-queue", Q3], [MAGIC + b" " + Q3.encode()]),
    ],
)
def test_a_hint_names_each_valid_queue_once(queues: list[str], expected: list[bytes]) -> None:
    assert encode(queues) == expected


def test_many_queues_split_into_datagrams_below_the_limit() -> None:
    queues = [f"{n:032x}" for n in range(100)]
    datagrams = encode(queues)
    assert len(datagrams) > 1 and all(len(d) <= MAX_DATAGRAM for d in datagrams)
    assert sorted(q for d in datagrams for q in decode(d)) == queues


@pytest.mark.parametrize(
    "datagram",
    [
        b"",
        MAGIC,
        b"orbit.hint.2 " + Q1.encode(),
        MAGIC + b" xyz",
        MAGIC + b" \xff" * 16,
        MAGIC + b"  " + Q1.encode(),
        MAGIC + b" " + ("ab" * 16).upper().encode(),
        MAGIC + (b" " + Q1.encode()) * 60,
    ],
)
def test_anything_but_a_valid_hint_is_ignored(datagram: bytes) -> None:
    assert decode(datagram) == ()


def test_one_flush_sends_every_datagram_to_every_peer() -> None:
    peers = (("127.0.0.1", 1), ("127.0.0.1", 2))
    sends = plan_sends([Q1, Q2], peers)
    assert [address for _, address in sends] == list(peers)
    assert {decode(datagram) for datagram, _ in sends} == {(Q1, Q2)}
    assert plan_sends([], peers) == [] and plan_sends([Q1], ()) == []


@pytest.mark.parametrize(
    ("count", "index", "failures", "expected"),
    [
        (1, 0, 0, (0, 0)),  # one server: the old behaviour, backoff by failures
        (1, 0, 3, (0, 3)),
        (3, 0, 0, (1, 0)),  # a welcomed session ended: the next server at once
        (3, 2, 0, (0, 0)),
        (3, 1, 1, (2, 0)),  # the next one refused too: keep going round
        (3, 2, 2, (0, 0)),
        (3, 0, 3, (1, 1)),  # a whole turn failed: back off
        (3, 0, 6, (1, 2)),
    ],
)
def test_a_worker_moves_to_the_next_server_and_backs_off_per_turn(
    count: int, index: int, failures: int, expected: tuple[int, int]
) -> None:
    assert next_server(count, index, failures) == expected


def test_several_urls_from_options_or_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_QUEUES, raising=False)
    monkeypatch.setenv(ENV_TOKEN, generate_secret())  # a token as Orbit issues it
    monkeypatch.setenv(ENV_URL, "http://a:1, http://b:2 ws://c:3")
    assert (
        worker_settings(url=None, token=None, queues=(Q1,)).url == "http://a:1,http://b:2,ws://c:3"
    )
    given = worker_settings(url=("http://x:1", "http://y:2"), token=None, queues=(Q1,))
    assert split_urls(given.url) == ("http://x:1", "http://y:2")
    from agentcall.orbit.domain.errors import SetupError

    with pytest.raises(SetupError, match="'ftp://b'"):
        worker_settings(url=("http://a", "ftp://b"), token=None, queues=(Q1,))


def test_the_advertised_hint_address_is_configurable() -> None:
    settings = from_environ(
        {
            "ORBIT_PEER_HOST": "10.1.2.3",
            "ORBIT_PEER_PORT": "7471",
            "ORBIT_PEER_ADVERTISE": "orbit-2.internal",
        }
    )
    execution = settings.execution
    assert (execution.peer_host, execution.peer_port, execution.peer_advertise) == (
        "10.1.2.3",
        7471,
        "orbit-2.internal",
    )
    assert from_environ(to_environ(settings)) == settings
    default = from_environ({}).execution
    assert (default.peer_host, default.peer_port) == ("127.0.0.1", 0)
