"""`orbit serve` never creates a SQLite file: `orbit migrate` does. A mistyped path or a moved
volume is one line naming the file and the fix, and nothing is created (no file, no directory).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from agentcall.orbit.cli import main
from agentcall.orbit.cli.database import missing_sqlite_file
from tests.support.ports import free_port

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    ("url", "missing"),
    [
        ("sqlite+aiosqlite:///orbit.db", "orbit.db"),
        ("sqlite+aiosqlite:///no/such/dir/orbit.db", "no/such/dir/orbit.db"),
        ("sqlite+aiosqlite:///present.db", None),
        ("sqlite+aiosqlite://", None),
        ("sqlite+aiosqlite:///:memory:", None),
        ("mysql+asyncmy://u:p@127.0.0.1:3306/orbit", None),
        ("not a url", None),
    ],
)
def test_which_sqlite_urls_name_a_missing_file(
    tmp_path: Path, url: str, missing: str | None
) -> None:
    (tmp_path / "present.db").touch()
    expected = None if missing is None else tmp_path / missing
    assert missing_sqlite_file(url, cwd=tmp_path) == expected


@pytest.mark.parametrize("relative", [True, False], ids=["relative", "absolute"])
@pytest.mark.parametrize("where", ["orbit.db", "moved/volume/orbit.db"])
def test_serve_refuses_a_missing_sqlite_file_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative: bool, where: str
) -> None:
    monkeypatch.chdir(tmp_path)
    url = f"sqlite+aiosqlite:///{where if relative else tmp_path / where}"
    done = CliRunner().invoke(main, ["serve", "--database", url, "--port", str(free_port())])
    assert done.exit_code == 1 and isinstance(done.exception, SystemExit), done.output
    lines = done.output.strip().splitlines()
    assert len(lines) == 1, done.output
    assert lines[0].startswith("orbit: error: SQLite file "), lines[0]
    assert "does not exist; `orbit serve` never creates a database" in lines[0]
    assert "orbit migrate --database URL" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_migrate_creates_the_file_that_serve_then_accepts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """migrate creates, serve never does."""
    monkeypatch.chdir(tmp_path)
    url = "sqlite+aiosqlite:///orbit.db"
    migrated = CliRunner().invoke(main, ["migrate", "--database", url])
    assert migrated.exit_code == 0, migrated.output
    assert (tmp_path / "orbit.db").is_file()
    assert missing_sqlite_file(url) is None
