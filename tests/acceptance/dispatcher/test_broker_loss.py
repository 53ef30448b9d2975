"""The broker goes away mid-campaign and comes back, twice (D-MQ-4, D-CMD-1, D-RES-1, the
crash rule): exactly one ``command.result`` per command, one ``call.result`` per accepted
call, nobody dialled twice.

The D reaches RabbitMQ through a TCP proxy; cutting the proxy drops the D's connection
with every prefetched delivery unacknowledged and every unconfirmed publish in flight, and
refuses reconnection until it is restored — for the D, the broker is down. The shared
RabbitMQ itself keeps running for everyone else (the Mock SaaS keeps publishing commands
into the queues meanwhile).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator

import pytest

from tests.acceptance.dispatcher.broker import originate_log
from tests.acceptance.dispatcher.harness import Scenario
from tests.support.services import amqp_url
from tests.support.tcp_proxy import TcpProxy
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.rabbitmq]

TASKS = ("loss-a", "loss-b")
PER_ROUND = 40  # commands per task and round; three rounds


@pytest.fixture
def proxy() -> Iterator[TcpProxy]:
    relay = TcpProxy.for_url(amqp_url()).start()
    yield relay
    relay.close()


def publish(s: Scenario, round_: int) -> dict[str, str]:
    sent: dict[str, str] = {}
    for t, task_id in enumerate(TASKS):
        callees = [f"1{t}{round_}{n:08d}" for n in range(PER_ROUND)]
        sent.update(zip(s.calls(task_id, callees=callees), callees, strict=True))
    return sent


def outage(s: Scenario, proxy: TcpProxy, down_s: float) -> None:
    proxy.cut()
    wait_for(lambda: not s.status()["amqp"]["connected"], 10, "the D sees the broker gone")
    time.sleep(down_s)
    proxy.restore()


def settled(s: Scenario, commands: set[str]) -> bool:
    results = s.results(event_type="command.result")
    answered = {r["command_id"] for r in results}
    accepted = {r["command_id"] for r in results if r["status"] == "accepted"}
    calls = {r["body"]["payload"]["source_command_id"] for r in s.results(event_type="call.result")}
    return answered >= commands and calls >= accepted


@pytest.mark.timeout(240)
def test_broker_lost_twice_mid_campaign_one_result_each_nobody_dialled_twice_d_mq_4(
    scenario: Scenario, proxy: TcpProxy
) -> None:
    s = scenario
    everyone = [
        f"1{t}{r}{n:08d}" for t in range(len(TASKS)) for r in range(3) for n in range(PER_ROUND)
    ]
    s.sip(max_concurrent_calls=1000, allowed_targets=everyone)  # a whitelist (D-NOTE-6)
    for task_id in TASKS:
        s.task(task_id, max_concurrent_calls=1000)
    s.quota(max_concurrent_calls=1000)
    s.start(DISPATCHER_AMQP_URL=proxy.url(amqp_url()), DISPATCHER_PREFETCH="50")
    commands = publish(s, 0)
    wait_for(lambda: len(s.results(event_type="command.result")) >= 10, 20, "work under way")
    outage(s, proxy, 2.0)  # with deliveries in flight and results being published
    commands |= publish(s, 1)
    wait_for(lambda: s.status()["amqp"]["connected"], 20, "the D reconnected")
    outage(s, proxy, 1.0)
    commands |= publish(s, 2)  # while the D is still reconnecting
    wait_for(lambda: settled(s, set(commands)), 120, "every command and call answered")
    assert s.status()["amqp"]["connections"] >= 3, "the link was lost and restored twice"

    check(s, commands)
    assert s.proc is not None and s.proc.alive


def check(s: Scenario, commands: dict[str, str]) -> None:
    results = s.results(event_type="command.result")
    events: dict[str, set[str]] = {}
    for r in results:
        events.setdefault(r["command_id"], set()).add(r["event_id"])
    assert set(events) == set(commands)
    assert all(len(e) == 1 for e in events.values()), "one command.result event per command"
    assert all(r["valid"] for r in results)
    accepted = {r["command_id"] for r in results if r["status"] == "accepted"}
    assert accepted, "some calls were accepted"
    calls: dict[str, set[str]] = {}
    for r in s.results(event_type="call.result"):
        calls.setdefault(r["body"]["payload"]["source_command_id"], set()).add(r["event_id"])
    assert set(calls) == accepted and all(len(e) == 1 for e in calls.values())
    assert s.republished_differently() == [], "a republish carries the same body"
    dialled = Counter(
        e["tags"]["command_id"]
        for e in originate_log(s.cell.data)
        if e["tags"]["command_id"] in commands
    )
    assert dialled and max(dialled.values()) == 1, "nobody dialled twice"
    assert set(dialled) <= accepted
    callees = Counter(commands[c] for c in dialled)
    assert max(callees.values()) == 1
