"""Config cache rules (D-CFG-2..4, D-CTL-5): scripted SaaS transport, real SQLite file."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from agentcall.dispatcher.saas.cache import ConfigCache
from agentcall.dispatcher.saas.client import SaasClient, SaasError
from agentcall.dispatcher.settings import Secret
from agentcall.dispatcher.store.db import Database

pytestmark = pytest.mark.integration
EXAMPLES = Path(__file__).resolve().parents[3] / "contracts" / "dispatcher" / "examples" / "valid"
D_ID = "c046b893-8628-4589-ae50-619d049248a6"
TASK = json.loads((EXAMPLES / "config-read.task_config" / "spec-v0.2-2.2-full-ai.json").read_text())
QUOTA = json.loads(
    (EXAMPLES / "config-read.tenant_quota" / "spec-v0.2-2.6.1-quota.json").read_text()
)
NOT_FOUND = {
    "schema_version": "config-read.v0.1",
    "resource": "error",
    "error": {"code": "resource_not_found", "message": "no"},
}


class Saas:
    """Answers the config GETs from mutable bodies and counts requests per path."""

    def __init__(self) -> None:
        self.task = copy.deepcopy(TASK)
        self.quota = copy.deepcopy(QUOTA)
        self.status = 200
        self.calls: dict[str, int] = {}

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.calls[path] = self.calls.get(path, 0) + 1
        if self.status != 200:
            return httpx.Response(self.status, json=NOT_FOUND)
        body = self.quota if path.endswith("/quota") else self.task
        return httpx.Response(200, json=body)

    def count(self, suffix: str) -> int:
        return sum(n for path, n in self.calls.items() if path.endswith(suffix))


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "state.sqlite")
    yield database
    await database.close()


def make(db: Database, saas: Saas, ttl: float = 60.0) -> tuple[ConfigCache, list[SaasError]]:
    errors: list[SaasError] = []
    client = SaasClient(
        "http://saas", D_ID, Secret("s"), 2.0, transport=httpx.MockTransport(saas.handle)
    )
    now = datetime(2026, 9, 21, 1, tzinfo=UTC)
    cache = ConfigCache(
        client, db, config_ttl_s=ttl, quota_ttl_s=60, clock=lambda: now, on_error=errors.append
    )
    return cache, errors


async def test_cached_and_single_flight_d_cfg_4(db: Database) -> None:
    saas = Saas()
    cache, _ = make(db, saas)
    lookups = await asyncio.gather(*(cache.task("task-mock") for _ in range(10)))
    assert all(lookup.config is not None for lookup in lookups)
    assert saas.count("/task/task-mock") == 1


async def test_reread_in_full_after_ttl_d_cfg_4(db: Database) -> None:
    saas = Saas()
    cache, _ = make(db, saas, ttl=0.1)
    await cache.task("task-mock")
    await asyncio.sleep(0.15)
    await cache.task("task-mock")
    assert saas.count("/task/task-mock") == 2


async def test_failed_read_gives_no_config_and_404_is_missing_d_cfg_4(db: Database) -> None:
    saas = Saas()
    saas.status = 404
    cache, errors = make(db, saas)
    lookup = await cache.task("task-mock")
    assert lookup.config is None and lookup.missing and errors[0].code == "resource_not_found"
    saas.status = 503
    cache2, _ = make(db, saas)
    lookup = await cache2.task("task-mock")
    assert lookup.config is None and not lookup.missing


async def test_older_revision_than_discovered_is_read_again_d_ctl_5(db: Database) -> None:
    saas = Saas()
    cache, _ = make(db, saas)
    assert (await cache.task("task-mock")).config.task_revision == 2  # type: ignore[union-attr]
    saas.task["task_revision"] = 3
    cache.note_revision("task-mock", 3)
    assert (await cache.task("task-mock")).config.task_revision == 3  # type: ignore[union-attr]
    assert saas.count("/task/task-mock") == 2


async def test_same_agent_version_with_other_content_is_refused_d_cfg_2(db: Database) -> None:
    saas = Saas()
    cache, _ = make(db, saas, ttl=0.05)
    assert (await cache.task("task-mock")).config is not None
    saas.task["agent"]["config"]["prompt"]["text"] = "A different prompt, same version id."
    await asyncio.sleep(0.1)
    lookup = await cache.task("task-mock")
    assert lookup.config is None and lookup.error == "agent_version_content_changed"
    fresh_process, _ = make(db, saas)  # the first digest is persisted, not only in memory
    assert (await fresh_process.task("task-mock")).error == "agent_version_content_changed"


async def test_quota_identity_and_valid_until_d_cfg_3(db: Database) -> None:
    saas = Saas()
    cache, errors = make(db, saas)
    quota = await cache.quota("tenant-id-mock", "tenant-mock")
    assert quota is not None and quota.max_concurrent_calls == 3
    assert await cache.quota("tenant-id-mock", "someone-else") is None
    assert errors and errors[-1].code == "identity_or_consistency"
    saas.quota["valid_until"] = (
        datetime(2026, 9, 21, 1, tzinfo=UTC) - timedelta(seconds=1)
    ).isoformat()
    expired, _ = make(db, saas)
    await expired.quota("tenant-id-mock", "tenant-mock")
    await expired.quota("tenant-id-mock", "tenant-mock")
    assert saas.count("/quota") == 4, "a quota past valid_until is never served from the cache"


async def test_status_names_each_reads_last_success_and_the_cached_limits(db: Database) -> None:
    """What the console's plumbing and limits panels show: the last success of each read
    (a failure later does not erase it) and the limits of the configs read."""
    saas = Saas()
    cache, _ = make(db, saas)
    assert (await cache.task("task-mock")).config is not None
    assert await cache.quota("tenant-id-mock", "tenant-mock") is not None
    status = cache.status()
    assert status["last_success"] == {
        "quota:tenant-id-mock": "2026-09-21T01:00:00+00:00",
        "task:task-mock": "2026-09-21T01:00:00+00:00",
    }
    assert status["limits"] == {
        "tasks": {"task-mock": 2},
        "tenants": {"tenant-id-mock": 3},
        "trunks": {},
    }
    saas.status = 503
    await cache.task("task-mock", fresh=True)
    assert "task:task-mock" in cache.status()["last_success"]
