"""Trunk usability (D-CFG-1: null means unknown), SIP end -> cell Ending, provider setup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcall.cell.calls.plan import TrunkSpec
from agentcall.cell.domain.errors import SipConfigError
from agentcall.cell.domain.model import EndCause, Outcome
from agentcall.cell.sip.digest import Credentials
from agentcall.cell.sip.driver import ending_for
from agentcall.cell.sip.outcome import CallEnd
from agentcall.cell.sip.setup import llm_settings, sip_registry
from agentcall.cell.sip.trunk import load_credentials, resolve_target

CREDS = {"t1": Credentials("u", "p")}


def trunk(**fields: object) -> TrunkSpec:
    base: dict[str, object] = {
        "trunk_id": "t1",
        "dial_prefix": "",
        "server_host": "sip.example",
        "server_port": 5060,
        "transport": "udp",
        "auth_mode": "digest",
    }
    base.update(fields)
    return TrunkSpec(**base)  # type: ignore[arg-type]


def test_usable_trunk() -> None:
    target = resolve_target(trunk(transport="TCP"), CREDS)
    assert (target.host, target.port, target.transport, target.payload_type) == (
        "sip.example",
        5060,
        "tcp",
        8,
    )
    assert target.credentials == CREDS["t1"]
    assert resolve_target(trunk(auth_mode="none"), CREDS).credentials is None


@pytest.mark.parametrize(
    "fields",
    [
        {"transport": None},  # D-CFG-1: null transport is unknown, not usable for real calls
        {"auth_mode": None},
        {"server_host": None},
        {"server_port": None},
        {"transport": "tls"},
        {"registration_required": True},
        {"auth_mode": "kerberos"},
        {"trunk_id": "other"},  # digest without credentials
        {"media_profile": {"format": "ulaw", "sample_rate_hz": 8000, "payload_type": 0}},
        {"media_profile": {"format": "alaw", "sample_rate_hz": 16000}},
    ],
)
def test_unusable_trunks_fail_closed(fields: dict[str, object]) -> None:
    with pytest.raises(SipConfigError):
        resolve_target(trunk(**fields), CREDS)


def test_credentials_file(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"t1": {"username": "u", "password": "p"}}))
    assert load_credentials(path) == CREDS
    path.write_text(json.dumps({"t1": {"username": "u"}}))
    with pytest.raises(SipConfigError, match="t1"):
        load_credentials(path)


A, N = Outcome.ANSWERED, Outcome.NO_ANSWER


@pytest.mark.parametrize(
    ("end", "agent", "hangup", "expected"),
    [
        (
            CallEnd(A, None, "remote_hangup"),
            None,
            "hangup_requested",
            (Outcome.ANSWERED, None, EndCause.CALLEE),
        ),
        (
            CallEnd(A, None, "max_duration"),
            None,
            "hangup_requested",
            (Outcome.ANSWERED, "max_duration", EndCause.LIMIT),
        ),
        (
            CallEnd(A, None, "agent_ended"),
            "opt_out",
            "hangup_requested",
            (Outcome.ANSWERED, "opt_out", EndCause.AGENT),
        ),
        (
            CallEnd(A, None, "hangup_requested"),
            None,
            "cell_shutdown",
            (Outcome.ANSWERED, "cell_shutdown", EndCause.CELL),
        ),
        (
            CallEnd(A, None, "rtp_timeout"),
            None,
            "hangup_requested",
            (Outcome.ANSWERED, "rtp_timeout", EndCause.NETWORK),
        ),
        (
            CallEnd(N, "ring_timeout", "no_answer"),
            None,
            "hangup_requested",
            (Outcome.NO_ANSWER, "ring_timeout", EndCause.LIMIT),
        ),
        (
            CallEnd(Outcome.BUSY, "sip_486", "busy"),
            None,
            "hangup_requested",
            (Outcome.BUSY, "sip_486", EndCause.CALLEE),
        ),
        (
            CallEnd(Outcome.FAILED, "sip_503", "failed"),
            None,
            "hangup_requested",
            (Outcome.FAILED, "sip_503", EndCause.NETWORK),
        ),
    ],
)
def test_ending_for(
    end: CallEnd, agent: str | None, hangup: str, expected: tuple[Outcome, str | None, EndCause]
) -> None:
    ending = ending_for(end, 1500, 9000, agent, hangup)
    assert (ending.outcome, ending.reason_code, ending.cause) == expected
    assert ending.talk_ms == (9000 if end.outcome is A else 0)


def test_llm_providers_come_from_environment_and_hide_the_key() -> None:
    env = {
        "CELL_LLM_OPENAI_MAIN_BASE_URL": "http://127.0.0.1:9/v1",
        "CELL_LLM_OPENAI_MAIN_API_KEY": "sk-secret",
        "CELL_LLM_EMPTY_BASE_URL": "",
    }
    settings = llm_settings(env)
    assert list(settings) == ["openai-main"]
    assert "sk-secret" not in repr(settings["openai-main"])
    registry = sip_registry(env)
    assert registry.names() == {
        "asr": ["mock", "pocketsphinx"],
        "llm": ["mock", "openai-main"],
        "tts": ["espeak-ng", "mock"],
    }
