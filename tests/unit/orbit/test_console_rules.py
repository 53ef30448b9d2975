"""Pure rules of the console and the inspection API: the throughput chart's bars, the CSRF
token of a session, the long-poll's `wait_ms` and the SDK's next wait, the CLI's tables."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agentcall.orbit.api.inspection_routes import parse_wait_ms
from agentcall.orbit.cli.table import table
from agentcall.orbit.console.chart import HEIGHT, MINUTES, bars
from agentcall.orbit.console.session import cookie_attributes, csrf_ok, csrf_token
from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.sdk.client.inspection import next_wait_ms

pytestmark = pytest.mark.unit
NOW = datetime(2026, 12, 1, 16, 30, 20, tzinfo=UTC)


@pytest.mark.parametrize(
    ("rows", "peak", "ok", "bad", "drawn"),
    [
        ([], 0, 0, 0, 0),
        ([("2026-12-01 16:30", "SUCCEEDED", 4)], 4, 4, 0, 1),
        ([("2026-12-01 16:30", "SUCCEEDED", 4), ("2026-12-01 16:30", "FAILED", 2)], 6, 4, 2, 2),
        ([("2026-12-01 15:31", "CANCELLED", 1)], 1, 0, 1, 1),  # the oldest minute shown
        ([("2026-12-01 15:30", "SUCCEEDED", 9)], 0, 0, 0, 0),  # an hour ago: left out
        ([("2026-12-01 16:31", "SUCCEEDED", 9)], 0, 0, 0, 0),  # the future: left out
    ],
)
def test_chart_counts_the_last_hour_by_minute(
    rows: list[tuple[str, str, int]], peak: int, ok: int, bad: int, drawn: int
) -> None:
    chart = bars(rows, NOW)
    assert (chart.peak, chart.total_ok, chart.total_bad, len(chart.bars)) == (peak, ok, bad, drawn)


def test_chart_bars_stack_failures_on_successes_and_fit_the_box() -> None:
    chart = bars(
        [
            ("2026-12-01 16:30", "SUCCEEDED", 3),
            ("2026-12-01 16:30", "FAILED", 1),
            ("2026-12-01 16:00", "SUCCEEDED", 2),
        ],
        NOW,
    )
    ok_bar, bad_bar = [b for b in chart.bars if b.x == max(b.x for b in chart.bars)]
    assert ok_bar.kind == "ok" and bad_bar.kind == "bad"
    assert bad_bar.y + bad_bar.height == pytest.approx(ok_bar.y)  # on top of the successes
    assert ok_bar.y + ok_bar.height == pytest.approx(HEIGHT)  # from the axis
    assert all(0 <= b.y and b.y + b.height <= HEIGHT + 1e-9 for b in chart.bars)
    assert "16:30 UTC: 3 succeeded, 1 failed or cancelled" in ok_bar.title
    assert MINUTES == 60


def test_csrf_token_belongs_to_its_session() -> None:
    token = csrf_token("orb_secret-one")
    assert len(token) == 64 and token == csrf_token("orb_secret-one")
    assert csrf_ok("orb_secret-one", token)
    assert not csrf_ok("orb_secret-two", token)  # another session's token
    assert not csrf_ok("orb_secret-one", None)
    assert not csrf_ok("orb_secret-one", "")
    assert not csrf_ok("orb_secret-one", token[:-1] + ("0" if token[-1] != "0" else "1"))


def test_session_cookie_is_httponly_strict_and_scoped_to_the_console() -> None:
    assert cookie_attributes(False) == {
        "httponly": True,
        "samesite": "strict",
        "path": "/ui",
        "secure": False,
    }
    assert cookie_attributes(True)["secure"] is True


@pytest.mark.parametrize(
    ("text", "wanted"), [(None, 0), ("0", 0), ("1", 1), ("250", 250), ("60000", 60000)]
)
def test_wait_ms_accepts_integer_literals_up_to_a_minute(text: str | None, wanted: int) -> None:
    assert parse_wait_ms(text) == wanted


@pytest.mark.parametrize(
    "text", ["", "-1", "+5", "05", "1.0", "1e3", "60001", "999999", "x", " 5", "٣"]
)
def test_wait_ms_refuses_anything_else(text: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_wait_ms(text)
    assert caught.value.field == "wait_ms"


@pytest.mark.parametrize(
    ("left_s", "wanted"),
    [(-1.0, 0), (0.0, 0), (0.0004, 0), (0.25, 250), (59.9, 59900), (61.0, 60000), (3600.0, 60000)],
)
def test_the_sdk_waits_what_is_left_within_one_long_poll(left_s: float, wanted: int) -> None:
    assert next_wait_ms(left_s) == wanted


def test_cli_tables_align_columns() -> None:
    text = table(["NAME", "N"], [["a", 1], ["longer", None]])
    assert text.splitlines() == ["NAME    N", "a       1", "longer"]


def test_queue_and_worker_views_match_the_openapi_schemas() -> None:
    import json
    from types import SimpleNamespace

    from agentcall.orbit.api.app import openapi_text
    from agentcall.orbit.domain.leasing import HandlerKey
    from agentcall.orbit.domain.worker_directory import view as worker_view
    from agentcall.orbit.execution.inspection import QueueView
    from agentcall.orbit.execution.worker_directory import record_of
    from agentcall.orbit.protocol.messages import WorkerIdentity

    schemas = json.loads(openapi_text())["components"]["schemas"]
    views = [
        QueueView("q" * 32, "main", {"WAITING": 2}, NOW, at=NOW).view(),
        QueueView("q" * 32, "main", {}, None).view(),
    ]
    for view in views:
        assert set(schemas["Queue"]["required"]) <= set(view) <= set(schemas["Queue"]["properties"])
    assert views[0]["oldest_waiting_age_ms"] == 0
    counts = views[1]["counts"]
    assert isinstance(counts, dict)
    assert set(counts) == set(schemas["Queue"]["properties"]["counts"]["required"])
    peer = SimpleNamespace(
        connection_id="c" * 32,
        namespace_id="n" * 32,
        worker=WorkerIdentity("w", "i" * 32, "sdk/1", "host", 7),
    )
    link = SimpleNamespace(
        peer=peer,
        handlers=frozenset({HandlerKey("h", "v1")}),
        capacity=4,
        in_flight={"a"},
        held=1,
        connected_at=NOW,
        seen_at=NOW,
        queue_order=("q" * 32,),
    )
    view = worker_view(record_of(link), frozenset({"q" * 32}))  # type: ignore[arg-type]
    assert view is not None
    worker = schemas["Worker"]
    assert set(worker["required"]) <= set(view) <= set(worker["properties"])
    assert view["in_flight"] == 1 and view["slots"] == 4
