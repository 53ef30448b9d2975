"""The log lines every service writes (`agentcall.logs`): one JSON object per record with the
message under `msg`, or one readable line; fields from `extra` either flat or as `fields`."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from agentcall import logs

pytestmark = pytest.mark.unit


def _record(**extra: object) -> logging.LogRecord:
    record = logging.LogRecord("svc.part", logging.WARNING, __file__, 1, "call %s", ("c1",), None)
    record.created = 1_700_000_000.25
    for key, value in extra.items():
        setattr(record, key, value)
    return record


def test_a_json_line_holds_the_message_under_msg_and_the_fields_flat() -> None:
    line = logs.JsonFormatter().format(_record(url="http://x", fields={"n": 2, "ü": "ö"}))
    assert "ö" in line  # not escaped
    assert json.loads(line) == {
        "ts": "2023-11-14T22:13:20.250+00:00",
        "level": "warning",
        "logger": "svc.part",
        "msg": "call c1",
        "url": "http://x",
        "n": 2,
        "ü": "ö",
    }


def test_private_and_standard_attributes_are_not_fields() -> None:
    record = _record(_hidden=1, color_message="x", message="y")
    assert logs.fields(record) == {}


def test_an_exception_goes_under_exc() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = _record()
        record.exc_info = sys.exc_info()
    body = json.loads(logs.JsonFormatter().format(record))
    assert body["exc"].endswith("ValueError: boom")
    assert "ValueError: boom" in logs.TextFormatter().format(record)


def test_a_readable_line_has_time_level_logger_message_and_pairs() -> None:
    line = logs.TextFormatter().format(_record(fields={"a": 1, "b": "two"}))
    at, rest = line.split(" ", 1)
    assert len(at) == len("HH:MM:SS.mmm") and at.endswith(".250")
    assert rest == "WARNING svc.part: call c1 a=1 b=two"
    assert logs.TextFormatter().format(_record()).endswith("svc.part: call c1")


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_scrub_sees_every_rendered_line(fmt: str) -> None:
    formatter = logs.formatter(fmt, scrub=lambda s: s.replace("s3cret", "***"))
    line = formatter.format(_record(token="s3cret"))
    assert "s3cret" not in line and "***" in line


def test_auto_is_json_off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert isinstance(logs.formatter("auto"), logs.JsonFormatter)
    assert isinstance(logs.formatter("text"), logs.TextFormatter)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert isinstance(logs.formatter("auto"), logs.TextFormatter)
    assert isinstance(logs.formatter("json"), logs.JsonFormatter)


def test_configure_a_named_logger_writes_each_record_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    name = "agentcall-logs-test"
    logs.configure("json", "debug", logger=name, quiet=("agentcall-logs-test.chatty",))
    try:
        logging.getLogger(f"{name}.part").debug("hello", extra={"k": 1})
        logging.getLogger(f"{name}.chatty").info("dropped")
        lines = capsys.readouterr().err.splitlines()
    finally:
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    assert [json.loads(line)["msg"] for line in lines] == ["hello"]
    assert json.loads(lines[0])["k"] == 1 and json.loads(lines[0])["level"] == "debug"
