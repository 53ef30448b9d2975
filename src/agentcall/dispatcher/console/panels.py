"""What each panel shows, assembled from the status snapshot and the console's reads (pure
once the rows are read: the snapshot is a dict, the rows are plain values)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from agentcall.dispatcher.console import aggregate, chart
from agentcall.dispatcher.store.console import Ended


def _time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def tasks_panel(
    snap: Mapping[str, Any],
    admissions: Mapping[str, Mapping[str, int]],
    active: Mapping[str, Mapping[str, int]],
) -> dict[str, Any]:
    limits = snap.get("config", {}).get("limits", {})
    reasons = sorted({reason for counts in admissions.values() for reason in counts})
    return {
        "admission": snap.get("admission", {}),
        "tasks": snap.get("tasks", []),
        "admissions": admissions,
        "reasons": reasons,
        "usage": aggregate.usage(active, limits),
    }


def calls_panel(
    ended: Sequence[Ended], results: Sequence[Mapping[str, Any]], now: datetime
) -> dict[str, Any]:
    buckets = aggregate.outcome_buckets(((e.bucket, e.outcome, e.count) for e in ended), now)
    durations = aggregate.histogram(
        ((e.duration_s, e.count) for e in ended), aggregate.DURATION_EDGES_S
    )
    quality = aggregate.quality((e.loss, e.jitter_ms, e.count) for e in ended)
    return {
        "outcomes": chart.outcomes_chart(buckets),
        "durations": chart.bins_chart(durations, " s"),
        "quality_calls": quality["calls"],
        "loss": chart.bins_chart(quality["loss"]),
        "jitter": chart.bins_chart(quality["jitter_ms"], " ms"),
        "results": results,
    }


def _reads(snap: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per SaaS read: its last success and, while it fails, its outage."""
    config = snap.get("config", {})
    outages = {f"{o['read']}:{o['key']}".rstrip(":"): o for o in snap["outages"]["active"]}
    keys = sorted(set(config.get("last_success", {})) | set(outages))
    return [
        {
            "read": key,
            "last_success": config.get("last_success", {}).get(key),
            "outage": outages.get(key),
        }
        for key in keys
    ]


def plumbing_panel(
    snap: Mapping[str, Any], facts: Mapping[str, Any], now: datetime
) -> dict[str, Any]:
    disc = snap.get("discovery", {})
    backlog = snap.get("outbox_backlog", {})
    return {
        "reads": _reads(snap),
        "read_failures": snap.get("outages", {}).get("read_failures", {}),
        "discovery": disc,
        "lag_s": aggregate.lag_seconds(
            now, bool(disc.get("caught_up")), _time(disc.get("caught_up_at"))
        ),
        "cursor_moved_at": facts.get("cursor_moved_at"),
        "amqp": snap.get("amqp", {}),
        "outbox": snap.get("outbox", {}),
        "oldest_pending_s": backlog.get("oldest_pending_age_s") if backlog.get("pending") else None,
        "blocked": snap.get("outbox_blocked", []),
        "cell_boot_id": snap.get("calls", {}).get("cell_boot_id"),
        "cell_reachable": snap.get("calls", {}).get("cell_reachable"),
        "cell": snap.get("cell_identity", {}),
        "readiness": snap.get("readiness"),
        "errors": snap.get("last_errors", [])[:10],
        "healthy": snap.get("healthy"),
        "failed": snap.get("failed"),
    }
