"""`orbit schedules` without a server: durations of --every, the option combinations refused
before any request with a message that says what to write, and the one-line hints that follow
an API refusal."""

from __future__ import annotations

import json

import click
import httpx
import pytest
from click.testing import CliRunner

from agentcall.orbit.cli import main
from agentcall.orbit.cli.schedules import parse_every

pytestmark = pytest.mark.unit
TOKEN = "orb_" + "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH"
SID = "5" * 32
BASE = ["schedules", "create", "--queue-id", "1" * 32, "--handler", "h"]
BASE += ["--handler-version", "1", "--payload-version", "1"]


@pytest.mark.parametrize(
    ("text", "ms"),
    [("1500ms", 1500), ("30s", 30_000), ("5m", 300_000), ("1h", 3_600_000), ("2d", 172_800_000)],
)
def test_every_takes_a_whole_number_with_a_unit(text: str, ms: int) -> None:
    assert parse_every(text) == ms


@pytest.mark.parametrize("text", ["5", "5x", "0s", "1.5m", "-1s", "m", ""])
def test_every_refuses_other_text(text: str) -> None:
    with pytest.raises(click.BadParameter, match="e.g. 30s, 5m, 1h, 1d"):
        parse_every(text)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "give exactly one of --cron"),
        (["--cron", "* * * * *", "--every", "1m"], "give exactly one of --cron"),
        (["--every", "1m", "--time-zone", "Europe/Berlin"], "--time-zone goes with --cron"),
        (["--cron", "0 9 * * *", "--anchor-at", "2026-12-02T00:00:00Z"], "--anchor-at goes"),
        (["--every", "1m", "--start-at", "tomorrow"], "--start-at"),
        (["--every", "1m", "--overlap", "queue"], "'queue' is not one of"),
        (["--every", "1m", "--payload", "{bad"], "not JSON"),
    ],
)
def test_create_refuses_before_any_request(extra: list[str], message: str) -> None:
    env = {"ORBIT_URL": "http://127.0.0.1:9", "ORBIT_TOKEN": TOKEN}
    result = CliRunner().invoke(main, [*BASE, *extra], env=env)
    assert result.exit_code == 2, result.output
    assert message in result.output


@pytest.mark.parametrize(
    ("status", "code", "hint"),
    [
        (403, "PERMISSION_DENIED", "needs schedules:read to read and schedules:write"),
        (404, "NOT_FOUND", "`orbit schedules list` shows"),
        (409, "STATE_CONFLICT", "leave out --expected-revision"),
    ],
)
def test_an_api_refusal_says_what_to_do(
    monkeypatch: pytest.MonkeyPatch, status: int, code: str, hint: str
) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        body = {"request_id": "r", "error": {"code": code, "message": "refused"}}
        return httpx.Response(status, content=json.dumps(body))

    real = httpx.Client.__init__

    def mocked(self: httpx.Client, *args: object, **kwargs: object) -> None:
        kwargs["transport"] = httpx.MockTransport(refuse)
        real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(httpx.Client, "__init__", mocked)
    env = {"ORBIT_URL": "http://orbit", "ORBIT_TOKEN": TOKEN}
    args = ["schedules", "pause", SID, "--expected-revision", "3"]
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 1
    assert f"{status} {code}: refused" in result.output and hint in result.output
