"""What the Dispatcher demo checks and prints once its campaign has finished.

``check`` lists every broken promise (invalid events, a second call.result for one call, a
wrong rejection reason, a wrong outcome, a recording missing or of another size in S3);
``summarize`` prints the tables and where the recordings are. Kept apart from
``dispatcher_demo.py`` (which starts and drives the processes) so each reads in one sitting.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Protocol


class Campaign(Protocol):
    """The parts of the running demo that the report reads."""

    expected: dict[str, str]  # callee -> outcome
    rejections: dict[str, str]  # command_id -> reason the D must give
    prefix: str  # S3 key prefix of this run
    opt_out_prefix: str  # callees whose agent hears an opt-out
    work: Any  # the folder with logs and state


def recording(result: dict[str, Any]) -> dict[str, Any]:
    rec: dict[str, Any] = result["body"]["payload"]["recording"]
    return rec


def check(
    demo: Campaign, commands: list[dict[str, Any]], calls: list[dict[str, Any]], s3: Any
) -> list[str]:
    """Everything the demo promises; returns the problems found."""
    problems = [
        f"invalid {r['event_type']} {r['event_id']}: {r['errors']}"
        for r in commands + calls
        if not r["valid"]
    ]
    per_call = Counter(r["body"]["payload"]["call_id"] for r in calls)
    problems += [
        f"call {c}: {n} different call.result events" for c, n in per_call.items() if n > 1
    ]
    per_command = Counter(r["command_id"] for r in commands)
    problems += [f"command {c}: {n} command.results" for c, n in per_command.items() if n > 1]
    reasons = {r["command_id"]: r["reason_code"] for r in commands}
    for command_id, reason in demo.rejections.items():
        if reasons.get(command_id) != reason:
            problems.append(
                f"command {command_id}: expected {reason}, got {reasons.get(command_id)}"
            )
    accepted = [r for r in commands if r["status"] == "accepted"]
    if len(accepted) != len(demo.expected):
        problems.append(f"{len(accepted)} accepted, expected {len(demo.expected)}")
    for result in calls:
        problems += _check_call(demo, result["body"]["payload"], s3)
    return problems


def _check_call(demo: Campaign, payload: dict[str, Any], s3: Any) -> list[str]:
    callee, rec = payload["callee"], payload["recording"]
    want = demo.expected.get(callee)
    problems = []
    if payload["outcome"] != want:
        problems.append(f"{callee}: outcome {payload['outcome']}, expected {want}")
    if want == "answered":
        if rec["status"] != "uploaded":
            problems.append(f"{callee}: recording {rec['status']} {rec.get('error_code')}")
        elif (
            s3.head_object(Bucket=rec["bucket"], Key=rec["object_key"])["ContentLength"]
            != rec["size_bytes"]
        ):
            problems.append(f"{callee}: object {rec['object_key']} has another size")
        if not payload["transcript"]:
            problems.append(f"{callee}: answered without a transcript")
        if payload["opt_out"] != callee.startswith(demo.opt_out_prefix):
            problems.append(f"{callee}: opt_out={payload['opt_out']}")
    elif rec["status"] != "not_created":
        problems.append(f"{callee}: {want} call with recording {rec['status']}")
    return problems


def table(title: str, rows: Counter[str]) -> None:
    print(f"  {title}")
    for key, count in sorted(rows.items()):
        print(f"    {key:<34} {count:>4}")


def summarize(
    demo: Campaign,
    commands: list[dict[str, Any]],
    calls: list[dict[str, Any]],
    s3: dict[str, str],
) -> None:
    print("\nSummary")
    table(
        "commands (command.result)", Counter(f"{r['status']}: {r['reason_code']}" for r in commands)
    )
    table("calls by outcome (call.result)", Counter(r["body"]["payload"]["outcome"] for r in calls))
    table("opt-outs", Counter(f"opt_out={r['body']['payload']['opt_out']}" for r in calls))
    recordings = Counter(
        recording(r)["status"]
        + (f" ({recording(r)['error_code']})" if recording(r).get("error_code") else "")
        for r in calls
    )
    for status in ("uploaded", "unavailable", "not_created"):
        recordings.setdefault(status, 0)
    table("recordings", recordings)
    keys = sorted(recording(r)["object_key"] for r in calls if recording(r)["status"] == "uploaded")
    where = f"s3://{s3['bucket']}/{demo.prefix}/"
    print(f"\nRecordings: {len(keys)} WAV files in {where} at {s3['endpoint']}")
    for key in keys[:3]:
        print(f"    s3://{s3['bucket']}/{key}")
    if len(keys) > 3:
        print(f"    ... and {len(keys) - 3} more")
    print(f"Logs and state: {demo.work}")
