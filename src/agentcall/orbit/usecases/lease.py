"""Leasing to a worker connection (worker-protocol.md §3.2, §5): the connection joins the
dispatcher with its credit, which pushes leases within it (fair across its queues, woken on
submit, requeue and retry); a `flow` message changes the credit; when it closes, its leases
are cut to the reconnect grace."""

from __future__ import annotations

from agentcall.orbit.execution.hub import Hub, Link


def open_link(hub: Hub, link: Link, held: set[str]) -> None:
    """The connection leases from now on; `held`: the attempts it still holds (rebound)."""
    hub.add(link, held)


def set_credit(hub: Hub, link: Link, capacity: int) -> None:
    """The connection takes up to `capacity` attempts at once from now on."""
    link.capacity = capacity
    hub.notify()


async def close_link(hub: Hub, link: Link) -> None:
    """No more leases to it; what it held expires after the reconnect grace."""
    hub.remove(link)
    await hub.disconnect(link.peer.connection_id)
