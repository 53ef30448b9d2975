"""The tenant an Orbit benchmark runs on: a migrated bench database gets one namespace, its
queues by name and a token with every permission on the queues the benchmark submits to
(shared by bench/orbit_fairness.py and bench/orbit_scale_out.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentcall.orbit.domain.tokens import ALL_PERMISSIONS
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.migrate import upgrade


@dataclass(frozen=True)
class BenchTenant:
    namespace_id: str
    queues: dict[str, str]  # queue name -> id, in the order asked
    token: str  # every permission on `queues`


async def bench_tenant(db: Database, names: Sequence[str]) -> BenchTenant:
    """Migrate `db`, then the namespace "bench" with the queues `names` (the first is the
    namespace's own first queue) and the token."""
    await upgrade(db)
    admin = Admin(db)
    made = await admin.init("bench", names[0])
    queues = {names[0]: made.queue_id}
    for name in names[1:]:
        queues[name] = await admin.create_queue(made.namespace_id, name)
    issued = await admin.create_token(
        made.namespace_id, ALL_PERMISSIONS, list(queues.values()), None
    )
    return BenchTenant(made.namespace_id, queues, issued.token)
