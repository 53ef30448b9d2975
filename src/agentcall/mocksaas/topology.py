"""MQ topology v3 read from ``contracts/dispatcher/mq-topology.json`` (D-MQ-1..3, D-MQ-6).

Names and arguments are never typed in code: every exchange, queue and binding the
Mock SaaS declares is rendered from the file, so a change of the contract file is a
change of what is declared.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcall.mocksaas.errors import ContractFileError, InvalidRequest

FILE_NAME = "mq-topology.json"


@dataclass(frozen=True)
class ExchangeSpec:
    name: str
    type: str
    durable: bool
    auto_delete: bool
    internal: bool
    direction: str


@dataclass(frozen=True)
class QueueSpec:
    role: str
    name: str
    durable: bool
    exclusive: bool
    auto_delete: bool
    arguments: dict[str, Any]


@dataclass(frozen=True)
class BindingSpec:
    exchange: str
    routing_key: str
    queue: str


@dataclass(frozen=True)
class Declarations:
    """What to declare, with placeholders already rendered."""

    exchanges: tuple[ExchangeSpec, ...]
    queues: tuple[QueueSpec, ...]
    bindings: tuple[BindingSpec, ...]


def _render(template: str, dispatcher_id: str, task_id: str | None) -> str:
    out = template.replace("<dispatcher_id>", dispatcher_id)
    if "<task_id>" in out:
        if task_id is None:
            raise ValueError(f"{template} needs a task_id")
        out = out.replace("<task_id>", task_id)
    return out


class Topology:
    """The parsed topology file and its naming rules."""

    def __init__(self, data: dict[str, Any]) -> None:
        try:
            self.limits: dict[str, int] = dict(data["limits"])
            self.exchanges = tuple(
                ExchangeSpec(
                    e["name"],
                    e["type"],
                    e["durable"],
                    e["auto_delete"],
                    e.get("internal", False),
                    e["direction"],
                )
                for e in data["exchanges"]
            )
            self.queues = {
                q["role"]: QueueSpec(
                    q["role"],
                    q["name"],
                    q["durable"],
                    q["exclusive"],
                    q["auto_delete"],
                    dict(q.get("arguments", {})),
                )
                for q in data["queues"]
            }
            self.bindings = tuple(
                BindingSpec(b["exchange"], b["routing_key"], b["queue"]) for b in data["bindings"]
            )
            self.publish: dict[str, Any] = dict(data["publish"])
        except (KeyError, TypeError) as exc:
            raise ContractFileError(f"{FILE_NAME}: missing or malformed {exc}") from exc

    @classmethod
    def load(cls, directory: Path) -> Topology:
        path = directory / FILE_NAME
        try:
            return cls(json.loads(path.read_text("utf-8")))
        except (OSError, ValueError) as exc:
            raise ContractFileError(f"{path}: {exc}") from exc

    # ---- names -------------------------------------------------------------
    def exchange(self, direction: str) -> ExchangeSpec:
        for e in self.exchanges:
            if e.direction == direction:
                return e
        raise ContractFileError(f"{FILE_NAME}: no exchange with direction {direction}")

    @property
    def command_exchange(self) -> str:
        return self.exchange("saas_to_dispatcher").name

    @property
    def result_exchange(self) -> str:
        return self.exchange("dispatcher_to_saas").name

    def queue_name(self, role: str, dispatcher_id: str, task_id: str | None = None) -> str:
        return _render(self.queues[role].name, dispatcher_id, task_id)

    def route(self, role: str, dispatcher_id: str, task_id: str | None = None) -> str:
        """Routing key bound to the queue of ``role``."""
        template = self.queues[role].name
        for b in self.bindings:
            if b.queue == template:
                return _render(b.routing_key, dispatcher_id, task_id)
        raise ContractFileError(f"{FILE_NAME}: no binding for queue role {role}")

    def task_of_route(self, routing_key: str, dispatcher_id: str) -> str | None:
        """The task_id inside a task routing key of this dispatcher (None if it is not one)."""
        head, _, tail = self.route("task", dispatcher_id, "\0").partition("\0")
        if routing_key.startswith(head) and routing_key.endswith(tail):
            return routing_key[len(head) : len(routing_key) - len(tail)] or None
        return None

    @property
    def max_task_queues(self) -> int:
        return int(self.limits["max_unretired_task_queues_per_dispatcher"])

    def check_task_names(self, dispatcher_id: str, task_id: str) -> None:
        route = self.route("task", dispatcher_id, task_id).encode()
        queue = self.queue_name("task", dispatcher_id, task_id).encode()
        if len(route) > self.limits["task_routing_key_max_bytes"]:
            raise InvalidRequest("task_id", "task routing key too long")
        if len(queue) > self.limits["task_queue_name_max_bytes"]:
            raise InvalidRequest("task_id", "task queue name too long")

    # ---- declarations -------------------------------------------------------
    def _declarations(
        self, roles: tuple[str, ...], d: str, t: str | None, with_exchanges: bool
    ) -> Declarations:
        queues = tuple(
            QueueSpec(
                q.role,
                _render(q.name, d, t),
                q.durable,
                q.exclusive,
                q.auto_delete,
                dict(q.arguments),
            )
            for role in roles
            for q in (self.queues[role],)
        )
        templates = {self.queues[r].name for r in roles}
        bindings = tuple(
            BindingSpec(b.exchange, _render(b.routing_key, d, t), _render(b.queue, d, t))
            for b in self.bindings
            if b.queue in templates
        )
        return Declarations(self.exchanges if with_exchanges else (), queues, bindings)

    def for_dispatcher(self, dispatcher_id: str) -> Declarations:
        """Exchanges, control/result/dead-letter queues and their bindings."""
        roles = tuple(r for r, q in self.queues.items() if "<task_id>" not in q.name)
        return self._declarations(roles, dispatcher_id, None, with_exchanges=True)

    def for_task(self, dispatcher_id: str, task_id: str) -> Declarations:
        """The task queue and its binding (declared before the first publish)."""
        return self._declarations(("task",), dispatcher_id, task_id, with_exchanges=False)
