"""The task search (`agentcall.orbit.domain.search.TaskFilter`) as SQL: a keyset page on
(created_at DESC, id DESC), a bounded count, and the conditions a bulk operation's snapshot
selects with. Every filter has an index whose leading columns are (queue_id, the filtered
column) and, where the filter is an equality, continue with (created_at, id), so the first
page reads about `limit` index entries (migration 0009; plans in docs/orbit/search.md)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.cursor import Position
from agentcall.orbit.domain.search import TaskFilter, prefix_end
from agentcall.orbit.domain.task import TaskSummary
from agentcall.orbit.store.tables import tasks
from agentcall.orbit.store.tasks import summary_of, summary_query

c = tasks.c


def conditions(where: TaskFilter) -> list[sa.ColumnElement[bool]]:
    """The WHERE terms of `where`, ANDed by the caller."""
    terms: list[sa.ColumnElement[bool]] = [c.queue_id == where.queue_id]
    equal: list[tuple[Any, str | None]] = [
        (c.state, None if where.state is None else where.state.value),
        (c.handler, where.handler),
        (c.handler_version, where.handler_version),
        (c.business_key, where.business_key),
        (c.error_code, where.error_code),
    ]
    terms.extend(column == value for column, value in equal if value is not None)
    if where.business_key_prefix is not None:
        terms.append(c.business_key >= where.business_key_prefix)
        end = prefix_end(where.business_key_prefix)
        if end is not None:
            terms.append(c.business_key < end)
    ranges = [
        (c.created_at, where.created_from, where.created_before),
        (c.completed_at, where.completed_from, where.completed_before),
    ]
    for column, start, before in ranges:
        if start is not None:
            terms.append(column >= start)
        if before is not None:
            terms.append(column < before)
    if where.completed_before is not None:
        # implied (a task completes after its creation), and what bounds the page's scan of
        # (queue_id, created_at, id) backwards: it starts at completed_before, not at the
        # newest task (docs/orbit/search.md)
        terms.append(c.created_at < where.completed_before)
    return terms


def after_position(after: Position) -> sa.ColumnElement[bool]:
    return sa.or_(
        c.created_at < after.created_at,
        sa.and_(c.created_at == after.created_at, c.id < after.task_id),
    )


def page_query(where: TaskFilter, after: Position | None, limit: int) -> sa.Select[Any]:
    terms = conditions(where)
    if after is not None:
        terms.append(after_position(after))
    return summary_query().where(*terms).order_by(c.created_at.desc(), c.id.desc()).limit(limit)


async def search_page(
    conn: AsyncConnection, where: TaskFilter, after: Position | None, limit: int
) -> list[TaskSummary]:
    """Up to `limit` summaries matching `where`, newest created first, strictly after `after`."""
    rows = (await conn.execute(page_query(where, after, limit))).all()
    return [summary_of(r) for r in rows]


async def count_matching(conn: AsyncConnection, where: TaskFilter, cap: int) -> int:
    """How many tasks match, counted up to `cap` (then `cap` + 1: "more than cap")."""
    inner = sa.select(c.id).where(*conditions(where)).limit(cap + 1).subquery()
    return int((await conn.execute(sa.select(sa.func.count()).select_from(inner))).scalar_one())
