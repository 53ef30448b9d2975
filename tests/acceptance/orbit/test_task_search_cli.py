"""`orbit task list` with the search filter (docs/orbit/search.md, "CLI") against a real
`orbit serve`: each option narrows the listing as GET /v1/tasks does, a time that is not
RFC 3339 is refused before any request, and a filter the API refuses names its field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentcall.orbit.cli import main
from tests.support.orbit_server import running_server

pytestmark = [pytest.mark.acceptance]


def orbit(*args: str, env: dict[str, str] | None = None) -> Any:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False, env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.output) if "--json" in args else result.output


def test_task_list_narrows_by_each_search_option(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'orbit.db'}"
    orbit("migrate", "--database", url, "--json")
    made = orbit("init", "--database", url, "--namespace", "acme", "--queue", "mail", "--json")
    with running_server(url, tmp_path / "server.log") as base:
        env = {"ORBIT_URL": base, "ORBIT_TOKEN": made["token"]}
        ids: dict[str, str] = {}
        for name, handler, version in [
            ("order-1", "mail.send", "v1"),
            ("order-12", "mail.send", "v2"),
            ("invoice-3", "file.convert", "v1"),
        ]:
            submitted = orbit(
                "tasks",
                "submit",
                "--queue-id",
                made["queue_id"],
                "--handler",
                handler,
                "--handler-version",
                version,
                "--payload-version",
                "v1",
                "--payload",
                "{}",
                "--business-key",
                name,
                "--key",
                f"search-{name}",
                "--json",
                env=env,
            )
            ids[name] = submitted["task"]["id"]

        def listed(*options: str) -> list[str]:
            found = orbit(
                "tasks", "list", "--queue-id", made["queue_id"], *options, "--json", env=env
            )
            return sorted(item["id"] for item in found["items"])

        def of(*names: str) -> list[str]:
            return sorted(ids[name] for name in names)

        assert listed() == of("order-1", "order-12", "invoice-3")
        assert listed("--handler", "mail.send") == of("order-1", "order-12")
        assert listed("--handler", "mail.send", "--handler-version", "v2") == of("order-12")
        assert listed("--business-key", "order-1") == of("order-1")
        assert listed("--business-key-prefix", "order-1") == of("order-1", "order-12")
        assert listed("--state", "WAITING", "--business-key-prefix", "inv") == of("invoice-3")
        assert listed("--error-code", "TIMEOUT") == []
        assert listed("--completed-from", "2000-01-01T00:00:00Z") == []  # none completed
        assert listed("--created-from", "2000-01-01T00:00:00Z") == of(*ids)
        assert listed("--created-before", "2000-01-01T00:00:00Z") == []

        bad_time = CliRunner().invoke(
            main,
            ["tasks", "list", "--queue-id", made["queue_id"], "--created-from", "yesterday"],
            env=env,
        )
        assert bad_time.exit_code == 2 and "RFC 3339" in bad_time.output
        refused = CliRunner().invoke(
            main,
            ["tasks", "list", "--queue-id", made["queue_id"], "--handler-version", "v1"],
            env=env,
        )
        assert refused.exit_code != 0 and "handler_version" in refused.output
