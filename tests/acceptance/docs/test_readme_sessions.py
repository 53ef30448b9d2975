"""The command sessions of README.md run as written (docs as tests).

A fenced ```sh block right after an HTML comment `<!-- docs-test: NAME -->` is a session: the
test runs it with bash (`-e -o pipefail`, so any failing command fails it) from a scratch
directory that links `.venv` and `examples` to the checkout (what the session writes under
`var/` stays there), against the local services, and checks the output the README promises.
Only the ports and the broker's address are changed, to free ones and to the local services'
(`scripts/services env`), so that the test runs beside anything else on the machine. The
background processes a session starts are stopped with its process group.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from tests.support.ports import free_port
from tests.support.services import amqp_url

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.docs,
    pytest.mark.rabbitmq,
    pytest.mark.timeout(240),
]

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
MARK = re.compile(r"<!-- docs-test: ([\w-]+) -->\n```sh\n(.*?)\n```", re.DOTALL)
DEFAULT_AMQP = "amqp://agentcall:agentcall@127.0.0.1:5672/"
PORTS = ("7470", "8088", "8470", "9470")  # Orbit, mock SaaS, cell, Dispatcher
# what each session must print (its commands' output, as the README shows it)
PROMISED = {
    "orbit-quickstart": [
        "SQLite file var/quickstart/orbit.db (a relative path",
        '"state":"SUCCEEDED"',
        '"result":{"echo":"hello from curl","attempt":1,"exact":1.10}',
    ],
    "dispatcher-session": [
        "DISPATCHER_AMQP_URL",
        "agentcall:***@",
        '"call.result": 3',
        '"invalid": 0',
        "admission  OPEN",
    ],
}
# a count block of `mocksaas admin results summary`, on one line (README) or indented (output)
COUNTS = re.compile(r'"(by_event_type|by_outcome)": (\{[^{}]*\})')


def sessions(text: str) -> dict[str, str]:
    return dict(MARK.findall(text))


def test_the_readme_marks_its_sessions() -> None:
    found = sessions(README.read_text(encoding="utf-8"))
    assert sorted(found) == sorted(PROMISED)
    text = "<!-- docs-test: a -->\n```sh\necho 1\n```\n<!-- docs-test: b -->\n```sh\nx\ny\n```"
    assert sessions(text) == {"a": "echo 1", "b": "x\ny"}


def summary_counts(text: str) -> dict[str, dict[str, int]]:
    """The first `by_event_type` and `by_outcome` blocks of a summary in `text`."""
    found: dict[str, dict[str, int]] = {}
    for key, block in COUNTS.findall(text):
        found.setdefault(key, json.loads(block))
    return found


def test_the_summary_counts_are_read_as_printed() -> None:
    line = '# "by_event_type": {"call.result": 3}, "by_outcome": {"answered": 3}, "invalid": 0'
    printed = '{\n  "by_event_type": {\n    "call.result": 3\n  },\n  "by_outcome": {}\n}'
    assert summary_counts(line) == {
        "by_event_type": {"call.result": 3},
        "by_outcome": {"answered": 3},
    }
    assert summary_counts(printed) == {"by_event_type": {"call.result": 3}, "by_outcome": {}}


def scratch(tmp_path: Path) -> Path:
    work = tmp_path / "checkout"
    work.mkdir()
    for name in (".venv", "examples"):
        (work / name).symlink_to(ROOT / name)
    return work


def localized(script: str) -> str:
    """The session with free ports and the local broker's address."""
    for port in PORTS:
        script = re.sub(rf"(?<=[:= ]){port}\b", str(free_port()), script)
    return script.replace(DEFAULT_AMQP, amqp_url())


def run_session(name: str, tmp_path: Path, page: Path = README) -> str:
    """The session `name` of `page` run as written; its output (the test fails unless it
    finished with status 0 within 180 s)."""
    script = localized(sessions(page.read_text(encoding="utf-8"))[name])
    prefixes = ("ORBIT_", "DISPATCHER_", "MOCKSAAS_", "CELL_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    work = scratch(tmp_path)
    out = tmp_path / "output.txt"  # a file: the session's background processes keep it open
    with out.open("wb") as sink:
        process = subprocess.Popen(
            ["bash", "-e", "-o", "pipefail", "-c", script],
            cwd=work,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        code = process.wait(timeout=180)
    except subprocess.TimeoutExpired:
        code = None
    finally:
        _stop_group(process.pid)
    output = out.read_text(errors="replace")
    assert code is not None, f"{name} did not finish in 180 s:\n{output}\n{_logs(work)}"
    assert code == 0, f"{name} failed ({code}):\n{output}\n{_logs(work)}"
    return output


def _stop_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return


def _logs(work: Path) -> str:
    return "\n".join(
        f"--- {path.name}\n{path.read_text(errors='replace')[-2000:]}"
        for path in sorted((work / "var").glob("*/*.log"))
    )


@pytest.mark.parametrize("name", sorted(PROMISED))
def test_the_session_runs_as_written(name: str, tmp_path: Path) -> None:
    output = run_session(name, tmp_path)
    for promised in PROMISED[name]:
        assert promised in output, f"{name}: {promised!r} not in the output:\n{output}"
    if name == "dispatcher-session":  # the summary's counts, as the README's comment shows them
        promised = summary_counts(sessions(README.read_text(encoding="utf-8"))[name])
        assert promised.keys() == {"by_event_type", "by_outcome"}, promised
        assert summary_counts(output) == promised, output
    if name == "orbit-quickstart":
        listed = [line for line in output.splitlines() if "demo.work@v1" in line]
        assert len(listed) == 2 and all("SUCCEEDED" in line for line in listed), output
