"""The plan SQLite chooses for the first page of each search filter (docs/orbit/search.md,
"Plans on SQLite"): every filter is answered by its own index, never by a scan of the table."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

from agentcall.orbit.domain.search import parse_filter
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.search import page_query
from tests.support.orbit_databases import fresh_url

pytestmark = [pytest.mark.integration]

QUEUE = "1" * 32
HOUR = {"completed_from": "2026-01-01T00:00:00Z", "completed_before": "2026-01-01T01:00:00Z"}
DAY = {"created_from": "2026-01-01T00:00:00Z", "created_before": "2026-01-02T00:00:00Z"}
CASES = [
    ({"handler": "mail.send"}, "ix_tasks_search_handler"),
    ({"handler": "mail.send", "handler_version": "v2"}, "ix_tasks_search_handler_version"),
    ({"business_key": "order-1"}, "ix_tasks_search_business_key"),
    ({"business_key_prefix": "order-1"}, "ix_tasks_search_business_key"),
    ({"error_code": "TIMEOUT"}, "ix_tasks_search_error"),
    ({"state": "FAILED"}, "ix_tasks_queue_state_created"),
    ({"state": "FAILED", "error_code": "TIMEOUT"}, "ix_tasks_search_error"),
    (DAY, "ix_tasks_queue_created"),
    ({}, "ix_tasks_queue_created"),
]


async def _plan(url: str, params: dict[str, str]) -> list[str]:
    where = parse_filter({"queue_id": QUEUE, **params})
    compiled = page_query(where, None, 21).compile(
        dialect=sqlite.dialect(), compile_kwargs={"literal_binds": True}
    )
    db = Database.open(url, pool_size=1)
    try:
        async with db.engine.connect() as conn:
            plan = await conn.execute(sa.text(f"EXPLAIN QUERY PLAN {compiled}"))
            return [str(row[-1]) for row in plan.all()]
    finally:
        await db.close()


@pytest.mark.parametrize(("params", "index"), CASES)
def test_each_filter_s_first_page_searches_its_index(
    tmp_path: Path, params: dict[str, str], index: str
) -> None:
    with fresh_url("sqlite", tmp_path, migrated=True) as url:
        plan = asyncio.run(_plan(url, params))
    assert plan[0].startswith(f"SEARCH tasks USING INDEX {index} ("), plan
    assert not any(step.startswith("SCAN tasks") for step in plan), plan


def test_a_completed_window_searches_by_completion_and_never_scans(tmp_path: Path) -> None:
    with fresh_url("sqlite", tmp_path, migrated=True) as url:
        plan = asyncio.run(_plan(url, HOUR))
    assert plan[0].startswith("SEARCH tasks USING INDEX "), plan
    assert not any(step.startswith("SCAN tasks") for step in plan), plan
