"""Occupancy counters derived from executions that hold capacity (D-CMD-4).

Loaded from the store at the start of a decision batch and updated in memory as the batch
accepts, inside the same transaction, so a batch never over-admits.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from agentcall.dispatcher.domain.model import Occupancy


@dataclass
class OccupancyIndex:
    tenants: Counter[str] = field(default_factory=Counter)
    tasks: Counter[str] = field(default_factory=Counter)
    trunks: Counter[str] = field(default_factory=Counter)

    @classmethod
    def from_counts(cls, rows: Iterable[tuple[str, str, str, int]]) -> OccupancyIndex:
        """Rows of (tenant_id, task_id, trunk_id, n): n executions holding capacity with
        those ids (the same triple may come more than once; the counts add up)."""
        index = cls()
        for tenant_id, task_id, trunk_id, n in rows:
            index.add(tenant_id, task_id, trunk_id, n)
        return index

    def add(self, tenant_id: str, task_id: str, trunk_id: str, n: int = 1) -> None:
        self.tenants[tenant_id] += n
        self.tasks[task_id] += n
        self.trunks[trunk_id] += n

    def view(self, tenant_id: str, task_id: str) -> Occupancy:
        return Occupancy(
            tenant=self.tenants[tenant_id], task=self.tasks[task_id], trunks=dict(self.trunks)
        )
