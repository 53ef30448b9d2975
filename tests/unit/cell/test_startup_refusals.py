"""``cell serve`` refuses a placeholder of the example environment (``CELL_ID=CHANGE-ME``) and,
in sip mode, a missing speech program (TTS espeak-ng, ASR pocketsphinx), each naming the fix
(the rules of ``agentcall.cell.cli.startup``, with the machine's probes replaced by a table)."""

from __future__ import annotations

import pytest

from agentcall.cell.cli.startup import refusals

pytestmark = pytest.mark.unit

ALL_TOOLS = {"espeak-ng": "/usr/bin/espeak-ng"}
ALL_MODULES = {"pocketsphinx"}


def _refusals(
    mode: str,
    cell_id: str | None,
    env: dict[str, str] | None = None,
    tools: dict[str, str] | None = None,
    modules: set[str] | None = None,
) -> list[str]:
    on_path = ALL_TOOLS if tools is None else tools
    found = ALL_MODULES if modules is None else modules
    return refusals(mode, cell_id, env or {}, on_path.get, found.__contains__)


@pytest.mark.parametrize("mode", ["sim", "sip"])
@pytest.mark.parametrize("cell_id", [None, "cell-eu-1"])
def test_a_real_id_with_its_tools_starts(mode: str, cell_id: str | None) -> None:
    assert _refusals(mode, cell_id, {"CELL_MODE": mode, "CELL_HTTP_PORT": "8470"}) == []


@pytest.mark.parametrize("mode", ["sim", "sip"])
@pytest.mark.parametrize("placeholder", ["CHANGE-ME", "change-me", "cell-CHANGEME"])
def test_a_placeholder_cell_id_is_refused_in_every_mode(mode: str, placeholder: str) -> None:
    (line,) = _refusals(mode, placeholder)
    assert line.startswith(f"--cell-id / CELL_ID is the placeholder {placeholder!r}"), line
    assert "set this cell's id" in line


def test_a_placeholder_in_another_cell_variable_names_it() -> None:
    env = {"CELL_LLM_OPENAI_MAIN_API_KEY": "CHANGE-ME", "HOME": "CHANGE-ME"}
    (line,) = _refusals("sip", "cell-1", env)
    assert line.startswith("CELL_LLM_OPENAI_MAIN_API_KEY is the placeholder 'CHANGE-ME'"), line


@pytest.mark.parametrize(
    ("tools", "modules", "expected"),
    [
        ({}, ALL_MODULES, ["TTS program espeak-ng, not found on PATH: apt-get install espeak-ng"]),
        (ALL_TOOLS, set(), ["ASR package pocketsphinx, not installed: pip install"]),
        ({}, set(), ["espeak-ng", "pocketsphinx"]),
    ],
    ids=["no-espeak-ng", "no-pocketsphinx", "neither"],
)
def test_sip_mode_refuses_missing_speech_tools(
    tools: dict[str, str], modules: set[str], expected: list[str]
) -> None:
    lines = _refusals("sip", "cell-1", tools=tools, modules=modules)
    assert len(lines) == len(expected)
    for line, part in zip(lines, expected, strict=True):
        assert line.startswith("sip mode needs the ") and part in line, line


def test_sim_mode_needs_no_speech_tools() -> None:
    assert _refusals("sim", "cell-1", tools={}, modules=set()) == []
