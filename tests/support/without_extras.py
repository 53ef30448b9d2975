"""Run one of the distribution's commands as the base install has it: the modules of every
extra (the server stacks, the broker and database drivers, the speech packages) cannot be
imported, exactly as if `pip install agentcall` had installed only the base dependencies
(click, httpx, sniffio, websockets).

    python -m tests.support.without_extras orbit tasks list --queue-id Q

The blocked names are the top-level modules of the optional dependencies in pyproject.toml;
tests/integration/deploy/test_cli_without_extras.py keeps the two lists equal."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

EXTRA_MODULES = frozenset(
    {
        "aio_pika",
        "aiormq",
        "aiosqlite",
        "alembic",
        "asyncmy",
        "boto3",
        "botocore",
        "httptools",
        "jinja2",
        "jsonschema",
        "numpy",
        "pocketsphinx",
        "prometheus_client",
        "pymysql",
        "sqlalchemy",
        "starlette",
        "tzdata",
        "uvicorn",
        "uvloop",
        "webrtcvad",
    }
)
PROGRAMS = {
    "orbit": "agentcall.orbit.cli",
    "dispatcher": "agentcall.dispatcher.cli",
    "cell": "agentcall.cell.cli",
    "mocksaas": "agentcall.mocksaas.cli",
}


class _Blocked(importlib.abc.MetaPathFinder):
    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name.partition(".")[0] in EXTRA_MODULES:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def main(argv: list[str]) -> None:
    program, *args = argv
    sys.meta_path.insert(0, _Blocked())
    command = importlib.import_module(PROGRAMS[program]).main
    command.main(args, prog_name=program)


if __name__ == "__main__":
    main(sys.argv[1:])
