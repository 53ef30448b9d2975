"""Schema-driven fuzzing of Orbit with Schemathesis, from the published `api/openapi.json`:

- against `orbit serve` on SQLite and on MariaDB, with a real token and real IDs (the tenant's
  queue in bodies and queries; existing tasks in paths, one case in three each): no 5xx at
  all, every response as the document describes it (status, headers, body schema), every
  schema-invalid request refused with 4xx, and every schema-valid request accepted unless a
  rule the schema cannot express refused it (times relative to now or to each other, field
  relations; listed in ACCEPTABLE_REFUSALS);
- against the app in this process on SQLite with the database failing for a stretch (an
  injected outage at the driver): 503 UNAVAILABLE during it and only then.

A case is judged as it is sent: the real IDs and the token are written into the case as new
containers, so Schemathesis re-validates it (a negative case whose invalid value became a
real ID is then a positive one, expected to be accepted), and a case that leaves the token
out on purpose is sent without it (expected 401).

Profiles (each of the three targets — SQLite server, MariaDB server, outage — is one target;
its cases are spread evenly over the operations with inputs, plus Schemathesis's coverage
cases and a few for the operations without inputs; the number sent per target is printed at
the end of the module):

    make test                             # short: SHORT_PER_OPERATION cases per operation
    ORBIT_SCHEMA_FUZZ=1 .venv/bin/pytest tests/integration/orbit/test_schema_fuzz.py
                                          # FUZZ_EXAMPLES (200) cases per target
    make fuzz                             # long: FUZZ_EXAMPLES=10000 cases per target
    eval "$(scripts/services env)"; FUZZ_EXAMPLES=10000 .venv/bin/pytest -m fuzz \
        tests/integration/orbit/test_schema_fuzz.py -k sqlite    # one target of the long one

A failure prints the request as a curl command; replay it against `orbit serve`.
"""

from __future__ import annotations

import asyncio
import copy
import json
import math
import os
import shutil
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import schemathesis
import sqlalchemy as sa
from hypothesis import settings
from schemathesis.config._checks import NegativeDataRejectionConfig
from schemathesis.specs.openapi.checks import positive_data_acceptance, unsupported_method
from sqlalchemy import event

from agentcall.orbit.api.app import openapi_text
from agentcall.orbit.assembly.server import create_app
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.migrate import upgrade
from tests.support.fuzzing import FUZZ, FUZZ_EXAMPLES

SCHEMA = schemathesis.openapi.from_dict(json.loads(openapi_text()))
# a schema-invalid request may also be refused by the HTTP layer: headers over 32 KiB (431), a
# body over 512 KiB (413)
_REFUSALS = SCHEMA.config.checks.negative_data_rejection.expected_statuses
SCHEMA.config.checks.negative_data_rejection = NegativeDataRejectionConfig(
    expected_statuses=[*_REFUSALS, "413", "431"]
)


def _has_inputs(operation: Any) -> bool:
    return bool(operation.path_parameters or operation.query or operation.body)


# the operations with inputs (path, query or body) share a target's cases; the others (no
# inputs but the token) are exhausted after a few cases
OPERATIONS = len(
    [op for op in SCHEMA.get_all_operations() if _has_inputs(op.ok())]  # type: ignore[union-attr]
)
# make test: a few generated cases per operation besides Schemathesis's coverage cases (about
# 950 cases per target, 50-85 s for the three targets on a loaded two-core machine)
SHORT_PER_OPERATION = 5
LONG = FUZZ_EXAMPLES >= 10_000 or bool(os.environ.get("ORBIT_SCHEMA_FUZZ"))
PER_OPERATION = math.ceil(FUZZ_EXAMPLES / OPERATIONS) if LONG else SHORT_PER_OPERATION
PROFILE = settings(FUZZ, max_examples=PER_OPERATION)
SENT: Counter[str] = Counter()  # cases sent per target

pytestmark = [
    pytest.mark.integration,
    pytest.mark.fuzz,
    # room for 0.5 case/s on a loaded machine (about 15 cases/s when quiet)
    pytest.mark.timeout(max(120, 2 * PER_OPERATION)),
]
# refusals of schema-valid requests by rules JSON Schema cannot state: times relative to now
# or to each other, relations between fields, a cursor's checksum, integers written as
# literals (JSON Schema's "integer" admits 1.0 and 1e2), the limits of numbers anywhere in an
# opaque payload, distinct evidence keys
ACCEPTABLE_REFUSALS = (
    "available_at",
    "start_deadline_at",
    "deadline",
    "initial_delay_ms",
    "max_delay_ms",
    "attempt_timeout_ms",
    "task_timeout_ms",
    "cursor",
    "since",  # the audit log's time range: a time outside the supported years
    "until",
    "integer literal",
    "number exponent",
    "number longer than",
    "finite double",
    "evidence keys must be distinct",
    # schedules: the cron's fields and the zone's name are checked against the cron grammar
    # and the IANA database, end_at against start_at, a backfill's range against now, from
    # and the slots it holds; a time's year (2000-9998)
    "year must be",
    "spec.cron",
    "spec.time_zone",
    "end_at",
    '"to: ',
    # a bulk operation's filter: its times, like available_at, are UTC within years 2000-9998
    "created_from",
    "created_before",
    "completed_from",
    "completed_before",
)


@dataclass
class Target:
    base_url: str
    token: str
    queue_id: str
    task_ids: tuple[str, ...]
    operation_id: str = "1" * 32  # a bulk operation of the tenant
    kind: str = "sqlite"  # the target, as counted in SENT
    schedule_ids: tuple[str, ...] = ()

    def authorize(self, case: Any) -> None:
        """The token in the case's own headers (so that the checks judge the request as
        sent), unless the case is a negative one that leaves it out on purpose (its answer
        must then be 401)."""
        if case.operation.schema.is_security_param_negated(case):
            return
        headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
        case.headers = {**headers, "Authorization": f"Bearer {self.token}"}

    def realize(self, case: Any) -> None:
        """Real IDs in place of generated ones, in one case out of three per field, chosen
        from the case itself (so a failing example replays the same way).

        Each changed part is assigned as a new container, never edited in place: Schemathesis
        judges a case by the values it sends only for containers assigned after generation
        (an in-place edit made before `call` counts as part of the generated case), so a
        negative case whose invalid value was replaced by a real ID is then judged positive
        instead of expecting a refusal."""
        seed = zlib.crc32(repr((case.path_parameters, case.query, case.body)).encode())
        self._realize_path(case, seed)
        query = dict(case.query or {})
        if "queue_id" in query and seed % 3:
            query["queue_id"] = self.queue_id
        wait = query.get("wait_ms")
        valid_wait = isinstance(wait, str) and wait.isdigit() and wait == str(int(wait))
        if valid_wait and int(str(wait)) <= 60_000:  # a long-poll really waits: keep it brief
            query["wait_ms"] = str(min(int(str(wait)), 50))
        if query != (case.query or {}):
            case.query = query
        if isinstance(case.body, dict) and seed % 3:
            self._real_body(case)

    def _real_body(self, case: Any) -> None:
        """The tenant's queue in a body's queue_id: a batch's items', a schedule template's and
        a bulk operation's filter's."""
        body: dict[str, Any] = copy.deepcopy(case.body)
        tasks = body.get("tasks")
        items: list[Any] = [*tasks] if isinstance(tasks, list) else [body]
        items += [body.get("template"), body.get("filter")]
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("queue_id"), str):
                item["queue_id"] = self.queue_id
        if body != case.body:
            case.body = body

    def _realize_path(self, case: Any, seed: int) -> None:
        path = dict(case.path_parameters or {})
        real = {
            "task_id": self.task_ids[seed % len(self.task_ids)],
            "queue_id": self.queue_id,
            "operation_id": self.operation_id,
        }
        if self.schedule_ids:
            real["schedule_id"] = self.schedule_ids[seed % len(self.schedule_ids)]
        found = {name: value for name, value in real.items() if name in path}
        if found and seed % 3:
            case.path_parameters = {**path, **found}


def schema_valid_is_accepted(ctx: Any, response: Any, case: Any) -> bool | None:
    """`positive_data_acceptance`, except for refusals by rules the schema cannot express."""
    try:
        positive_data_acceptance(ctx, response, case)
    except AssertionError:
        text = response.text if hasattr(response, "text") else ""
        if response.status_code == 400 and any(name in text for name in ACCEPTABLE_REFUSALS):
            return None
        raise
    return None


async def _seed(db_url: str, base_url: str) -> Target:
    import httpx

    db = Database.open(db_url, pool_size=1)
    try:
        made = await Admin(db).init(f"fuzz-{zlib.crc32(base_url.encode())}", "main")
    finally:
        await db.close()
    headers = {"Authorization": f"Bearer {made.token}"}
    body = {
        "queue_id": made.queue_id,
        "handler": "h",
        "handler_version": "v1",
        "payload_version": "v1",
        "payload": {"n": 1},
    }
    ids = []
    bulk = {"filter": {"queue_id": made.queue_id, "state": "FAILED"}, "action": "retry"}
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        for key in ("fuzz-a", "fuzz-b"):
            response = await http.post(
                "/v1/tasks", json=body, headers={**headers, "Idempotency-Key": key}
            )
            ids.append(response.json()["data"]["task"]["id"])
        await http.post(
            f"/v1/tasks/{ids[1]}:cancel",
            json={"expected_revision": "1", "reason": "fuzz"},
            headers={**headers, "Idempotency-Key": "c"},
        )
        started = await http.post(
            "/v1/bulk-operations",
            json={**bulk, "reason": "fuzz"},
            headers={**headers, "Idempotency-Key": "b"},
        )
        operation_id = started.json()["data"]["operation"]["id"]
        schedule_ids = await _schedules(http, headers, body)
    kind = "sqlite" if db_url.startswith("sqlite") else "mariadb"
    return Target(
        base_url,
        made.token,
        made.queue_id,
        tuple(ids),
        operation_id=operation_id,
        kind=kind,
        schedule_ids=schedule_ids,
    )


async def _schedules(http: Any, headers: dict[str, str], template: Any) -> tuple[str, ...]:
    """A cron schedule and a paused interval schedule, for the schedule routes' paths."""
    ids = []
    for key, spec, state in (
        ("fuzz-cron", {"cron": "*/5 * * * *", "time_zone": "Europe/Berlin"}, "active"),
        ("fuzz-interval", {"interval_ms": 3_600_000}, "paused"),
    ):
        body = {"template": template, "spec": spec, "state": state}
        response = await http.post(
            "/v1/schedules", json=body, headers={**headers, "Idempotency-Key": key}
        )
        ids.append(response.json()["data"]["schedule"]["id"])
    return tuple(ids)


@pytest.fixture(scope="module")
def target(db_url: str, server_url: str) -> Target:
    return asyncio.run(_seed(db_url, server_url))


@pytest.fixture(scope="module", autouse=True)
def report_cases(request: pytest.FixtureRequest) -> Iterator[None]:
    """Print the number of cases sent per target once the module has run."""
    yield
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if reporter is not None and capture is not None and SENT:
        sent = ", ".join(f"{name} {count}" for name, count in sorted(SENT.items()))
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"\nSchemathesis cases sent per target: {sent}")


@SCHEMA.parametrize()
@PROFILE
def test_orbit_serve_answers_every_request_as_documented(case: Any, target: Target) -> None:
    target.realize(case)
    target.authorize(case)
    SENT[target.kind] += 1
    # an unknown method is 404 like an unknown route (docs/orbit/README.md), not 405
    case.call_and_validate(
        base_url=target.base_url,
        excluded_checks=[positive_data_acceptance, unsupported_method],
        additional_checks=[schema_valid_is_accepted],
    )


class Outage:
    """Makes every statement of an engine fail like a lost database while `down`."""

    def __init__(self, engine: sa.Engine) -> None:
        self.down = False
        self.armed = False  # once the app has started (its lifespan reads the database)
        event.listen(engine, "before_cursor_execute", self._before)

    def _before(self, *args: Any) -> None:
        if self.down:
            raise sa.exc.OperationalError("statement", {}, OSError("injected: database down"))


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A SQLite file with a namespace and a queue, made once: its path, token and queue."""
    path: Path = tmp_path_factory.mktemp("fuzz-outage") / "seed.db"

    async def prepare() -> tuple[str, str]:
        db = Database.open(f"sqlite+aiosqlite:///{path}")
        try:
            await upgrade(db)
            made = await Admin(db).init("fuzz-outage", "main")
            return made.token, made.queue_id
        finally:
            await db.close()

    token, queue_id = asyncio.run(prepare())
    return path, token, queue_id


@pytest.fixture
def disarmed(seeded: tuple[Path, str, str], tmp_path: Path) -> Iterator[tuple[Any, Target, Outage]]:
    """The app in this process over its own copy of the seeded SQLite file, one per
    operation. Schemathesis runs the app's lifespan on an event loop of its own for each
    operation and sends every case to it in-process; an app, its database handle and its
    file are never shared between two such loops (a task of an earlier loop stopped
    mid-transaction would hold the file's write lock). The lifespan reads the database: no
    outage until the operation's first answer."""
    seed, token, queue_id = seeded
    path = tmp_path / "orbit.db"
    shutil.copy(seed, path)
    db = Database.open(f"sqlite+aiosqlite:///{path}")
    outage = Outage(db.engine.sync_engine)
    target = Target("http://orbit", token, queue_id, ("1" * 32,), kind="outage")
    yield create_app(db), target, outage
    asyncio.run(db.close())  # its connections' threads end with it


OUTAGE_EVERY = 4  # one case in four runs with the database down


@SCHEMA.parametrize()
@PROFILE
def test_only_an_outage_answers_503(case: Any, disarmed: tuple[Any, Target, Outage]) -> None:
    app, target, outage = disarmed
    target.realize(case)
    target.authorize(case)
    SENT[target.kind] += 1
    chosen = zlib.crc32(repr((case.path, case.query, case.body)).encode()) % OUTAGE_EVERY == 0
    outage.down = outage.armed and chosen
    try:
        response = case.call(app=app)
    finally:
        was_down, outage.down = outage.down, False
    outage.armed = True  # an answer came: the app has started
    assert response.status_code < 500 or (was_down and response.status_code == 503), (
        response.status_code,
        response.text[:500],
    )
    if response.status_code == 503 and "error" in response.json():  # /readyz has its own body
        assert response.json()["error"]["code"] == "UNAVAILABLE"
