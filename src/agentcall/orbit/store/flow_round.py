"""What one lease round of a flow-controlled queue reads and writes, in as few round trips as
the rules allow (docs/orbit/flow-control.md, "What it costs"):

1. `open_round`: the queue's settings row (locked when the queue has a limit), the database
   clock, and its token buckets and fairness passes, in one statement;
2. the running tasks per concurrency key, only when the queue limits keys;
3. `candidates`: without fairness one index range; with fairness a page of the fairness keys
   that have WAITING tasks (`fair_keys`, a loose scan of ix_tasks_fair), then the heads of
   every key of it in one
   UNION ALL statement (up to `UNION_PARTS` keys per statement), each head range locked;
   a queue with fairness alone reads them unlocked and then `claims` only as many rows of
   each key as the choice takes from it, locked (so that a round running beside it skips
   only rows that are being leased: FIFO within a key holds);
4. `write_back`: the buckets and passes the choice changed, in one REPLACE (`write_passes`:
   a process's fairness passes of a queue with fairness alone).

The statements with one part per key or per counter are generated once per shape and kept
with the named queries of `flow.sql`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from agentcall.orbit.domain.flow import Bucket, FlowState, LeaseChoice
from agentcall.orbit.domain.flow_settings import QueueFlow, parse_settings
from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.strictjson import read_json_text
from agentcall.orbit.store.connector import HotConnection, execute, fetch
from agentcall.orbit.store.ports import Leasable
from agentcall.orbit.store.sql import QUERIES
from agentcall.orbit.store.tasks import row_task

BUCKET, PASS = "bucket", "pass"
MILLI = 1000  # bucket levels are kept in milli-tokens
MAX_FAIR_KEYS = 64  # fairness keys read at once (the next read takes the next page)
UNION_PARTS = 16  # key head ranges per candidates statement
NO_KEY = [""]  # `NOT IN (:blocked)` with nothing blocked (a concurrency key is never "")
LIVE = [TaskState.LEASED.value, TaskState.RUNNING.value]
WAITING = TaskState.WAITING.value


async def open_round(
    conn: HotConnection, queue_id: str, *, locked: bool = True
) -> tuple[QueueFlow, datetime, FlowState] | None:
    """The queue's settings (`locked`: their row locked until the transaction ends), the
    database clock and the queue's counters; None: the queue has no settings row. The state's
    `running` is left empty (`running` reads it when the rules need it)."""
    query = "flow_round" if locked else "flow_round_shared"
    rows = await fetch(conn, query, {"queue_id": queue_id})
    if not rows:
        return None
    first = rows[0]
    queue = QueueFlow(queue_id, first.revision, parse_settings(read_json_text(first.settings)))
    buckets: dict[str, Bucket] = {}
    passes: dict[str, int] = {}
    for row in rows:
        if row.kind == BUCKET:
            buckets[row.flow_key] = Bucket(row.level / MILLI, row.counted_at)
        elif row.kind == PASS:
            passes[row.flow_key] = row.level
    now = first.now_at
    assert isinstance(now, datetime)
    return queue, now, FlowState({}, buckets, passes)


async def running(conn: HotConnection, queue_id: str) -> dict[str, int]:
    """LEASED and RUNNING tasks per concurrency key: derived from the tasks, never kept apart."""
    rows = await fetch(conn, "flow_running", {"queue_id": queue_id, "live": LIVE})
    return {row.concurrency_key: row.running for row in rows}


async def candidates(
    conn: HotConnection,
    queue_id: str,
    handlers: Iterable[HandlerKey],
    now: datetime,
    limit: int,
    *,
    blocked: Iterable[str],
    fair: bool,
    locked: bool = True,
    keys: Iterable[str | None] = (),
) -> list[Leasable]:
    """Ready WAITING rows in lease order, without the concurrency keys at their limit, locked
    (`locked`, else only read): up to `limit` of the queue, or (`fair`) up to `limit` per
    fairness key of `keys` (a page of `fair_keys`)."""
    params = _params(queue_id, handlers, now, limit, blocked)
    if not fair:
        rows = await fetch(conn, "flow_candidates", params)
        return [Leasable(row_task(row), row.lease_count) for row in rows]
    return await _heads(conn, params, {key: limit for key in keys}, locked=locked)


@dataclass(frozen=True, slots=True)
class KeyPage:
    keys: list[str | None]  # None: the tasks without a fairness key
    after: str | None  # where the next page starts; None: at the first key


async def fair_keys(conn: HotConnection, queue_id: str, after: str | None = None) -> KeyPage:
    """A page of the fairness keys that have WAITING tasks: up to MAX_FAIR_KEYS in key order
    after `after` (None: from the first, the tasks without a key included), wrapping round to
    the first keys when fewer follow `after`. Reading the pages in turn reaches every key, so no
    key waits for ever behind MAX_FAIR_KEYS busier ones. Each read scans the queue's WAITING
    index range from `after`: its cost grows with the backlog."""
    params: dict[str, Any] = {"queue_id": queue_id, "waiting": WAITING, "limit": MAX_FAIR_KEYS}
    keys: list[str | None] = []
    if after is not None:
        rows = await fetch(conn, "flow_fair_keys_after", {**params, "after": after})
        keys = [row.fairness_key for row in rows]
    if len(keys) < MAX_FAIR_KEYS:
        rows = await fetch(conn, "flow_fair_keys", {**params, "limit": MAX_FAIR_KEYS - len(keys)})
        keys += [key for key in (row.fairness_key for row in rows) if key not in keys]
    full = len(keys) == MAX_FAIR_KEYS and keys[-1] is not None
    return KeyPage(keys, keys[-1] if full else None)


async def claims(
    conn: HotConnection,
    queue_id: str,
    handlers: Iterable[HandlerKey],
    now: datetime,
    counts: Mapping[str | None, int],
) -> list[Leasable]:
    """The first `counts[key]` ready WAITING rows of each fairness key, locked, skipping rows
    another transaction holds (a round of a queue with fairness alone, after its choice)."""
    params = _params(queue_id, handlers, now, 0, ())
    return await _heads(conn, params, {k: n for k, n in counts.items() if n > 0}, locked=True)


def _params(
    queue_id: str, handlers: Iterable[HandlerKey], now: datetime, limit: int, blocked: Iterable[str]
) -> dict[str, Any]:
    return {
        "queue_id": queue_id,
        "waiting": WAITING,
        "now": now,
        "handlers": [(h.handler, h.handler_version) for h in sorted(handlers)],
        "limit": limit,
        "blocked": sorted(blocked) or NO_KEY,
    }


async def _heads(
    conn: HotConnection,
    params: dict[str, Any],
    limits: Mapping[str | None, int],
    *,
    locked: bool,
) -> list[Leasable]:
    """The heads of the fairness keys of `limits` (None: the tasks without a key), up to
    its number of rows each, in one statement per `UNION_PARTS` keys."""
    keys = sorted(limits, key=lambda key: (key is None, key or ""))
    out: list[Leasable] = []
    for start in range(0, len(keys), UNION_PARTS):
        part = keys[start : start + UNION_PARTS]
        named = [key for key in part if key is not None]
        query = _heads_query(len(named), len(named) < len(part), locked)
        values = {**params, **{f"fair_{n}": key for n, key in enumerate(named)}}
        values.update({f"limit_{n}": limits[key] for n, key in enumerate(part)})
        out += [Leasable(row_task(r), r.lease_count) for r in await fetch(conn, query, values)]
    return out


@lru_cache(maxsize=UNION_PARTS * 4 + 4)
def _heads_query(keyed: int, unkeyed: bool, locked: bool) -> str:
    """The name of the statement reading the heads of `keyed` fairness keys (parameters
    `:fair_0`…, up to `:limit_0`… rows each) and, with `unkeyed`, of the tasks without a
    fairness key (the last limit); `locked`: each head range locked, skipping locked rows."""
    name = f"flow_fair_heads_{keyed}_{int(unkeyed)}_{int(locked)}"
    where = QUERIES["flow_candidate_where"]
    lock = "{skip_locked}" if locked else ""
    tests = [f"fairness_key = :fair_{n}" for n in range(keyed)]
    if unkeyed:
        tests.append("fairness_key IS NULL")
    parts = [
        f"SELECT * FROM (SELECT * FROM tasks WHERE {where} AND {test}"
        f" ORDER BY lease_order, id LIMIT :limit_{n}{lock}) AS head_{n}"
        for n, test in enumerate(tests)
    ]
    QUERIES[name] = " UNION ALL ".join(parts)
    return name


async def write_back(
    conn: HotConnection, queue_id: str, choice: LeaseChoice, now: datetime
) -> None:
    """The buckets and passes the choice used, as they are after it."""
    rows = [
        (BUCKET, key, round(b.tokens * MILLI), b.refilled_at) for key, b in choice.buckets.items()
    ] + [(PASS, key, level, now) for key, level in choice.passes.items()]
    await _write(conn, queue_id, rows)


async def write_passes(
    conn: HotConnection, queue_id: str, passes: Mapping[str, int], now: datetime
) -> None:
    """Fairness passes of the queue, replaced (the other counters are left as they are)."""
    await _write(conn, queue_id, [(PASS, key, level, now) for key, level in sorted(passes.items())])


async def _write(
    conn: HotConnection, queue_id: str, rows: list[tuple[str, str, int, datetime]]
) -> None:
    if not rows:
        return
    params: dict[str, Any] = {"queue_id": queue_id}
    for n, (kind, key, level, at) in enumerate(rows):
        params.update({f"kind_{n}": kind, f"key_{n}": key, f"level_{n}": level, f"at_{n}": at})
    await execute(conn, _replace_query(len(rows)), params)


@lru_cache(maxsize=256)
def _replace_query(count: int) -> str:
    """The name of the statement writing `count` counters of one queue (REPLACE: MariaDB,
    MySQL and SQLite alike, the row of the same key is replaced)."""
    name = f"flow_replace_counters_{count}"
    values = ", ".join(
        f"(:queue_id, :kind_{n}, :key_{n}, :level_{n}, :at_{n})" for n in range(count)
    )
    QUERIES[name] = (
        f"REPLACE INTO flow_counters (queue_id, kind, flow_key, level, at) VALUES {values}"
    )
    return name
