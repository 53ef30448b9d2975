"""The labels of the per-queue metrics: each queue's namespace name and queue name (queue
names are unique within a namespace only, so the two together name a queue)."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.store.tables import namespaces, queues


async def queue_labels(
    conn: AsyncConnection, queue_ids: Sequence[str] | None = None
) -> dict[str, tuple[str, str]]:
    """{queue_id: (namespace name, queue name)} of `queue_ids` (None: every queue)."""
    query = sa.select(queues.c.id, namespaces.c.name, queues.c.name).join(
        namespaces, namespaces.c.id == queues.c.namespace_id
    )
    if queue_ids is not None:
        query = query.where(queues.c.id.in_(list(queue_ids)))
    return {queue_id: (ns, name) for queue_id, ns, name in await conn.execute(query)}
