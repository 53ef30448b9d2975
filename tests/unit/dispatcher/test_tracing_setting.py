"""Dispatcher tracing (DISPATCHER_TRACING): off unless set to 1, refused when the value is
not 0 or 1, and a D that does not trace never imports OpenTelemetry."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentcall.dispatcher.settings import SettingsError, load_settings
from agentcall.dispatcher.telemetry.tracing import NO_TRACING
from agentcall.dispatcher.telemetry.tracing_setup import from_settings

from .test_settings import ENV

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("raw", "expected"), [(None, False), ("0", False), ("1", True), ("true", True)]
)
def test_the_setting_is_read_and_off_by_default(raw: str | None, expected: bool) -> None:
    env = ENV if raw is None else {**ENV, "DISPATCHER_TRACING": raw}
    assert load_settings(env).tracing is expected


def test_another_value_stops_the_start_naming_the_setting() -> None:
    with pytest.raises(SettingsError, match="DISPATCHER_TRACING is invalid: must be 0 or 1"):
        load_settings({**ENV, "DISPATCHER_TRACING": "yes"})


def test_tracing_off_is_the_no_op_tracer_and_imports_no_opentelemetry() -> None:
    assert from_settings(False) is NO_TRACING
    code = (
        "import sys\n"
        "import agentcall.dispatcher.service\n"
        "from agentcall.dispatcher.telemetry.tracing_setup import from_settings\n"
        "from_settings(False)\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
