"""Recordings end to end: mocksaas + the D + a sim cell writing real WAVs + SeaweedFS.

D-REC-1/2 and D-RES-1/2 through the real processes: the cell PUTs its file to the URL
the D presigned, the D verifies the object and sends one call.result per call.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.dispatcher.broker import originate_log
from tests.acceptance.dispatcher.harness import Cell, MockSaas, Scenario, s3_env
from tests.support.cell_scripts import recorded_talk_script
from tests.support.services import s3_settings

pytestmark = [pytest.mark.acceptance, pytest.mark.rabbitmq, pytest.mark.s3]

# *1 talks and records, *2 is busy, *3 opts out, *4 talks without a recording.
SCRIPT = recorded_talk_script(
    {
        "match": {"glob": "*3"},
        "outcome": "answered",
        "ring_ms": 500,
        "turns": ["Who is this?", "Please stop calling me."],
        "recording": True,
    },
    {
        "match": {"glob": "*4"},
        "outcome": "answered",
        "ring_ms": 500,
        "turns": ["Hello?"],
        "recording": False,
    },
)


@pytest.fixture(scope="module")
def rec_cell(tmp_path_factory: pytest.TempPathFactory, saas: MockSaas) -> Iterator[Cell]:
    process = Cell(tmp_path_factory.mktemp("rec-cell"), SCRIPT).start()
    yield process
    process.proc.stop()


@pytest.fixture
def scene(saas: MockSaas, rec_cell: Cell, workdir: Path) -> Iterator[Scenario]:
    s = Scenario(saas, rec_cell, workdir)
    yield s
    if s.proc is not None and s.proc.alive:
        s.stop()


def by_callee(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["body"]["payload"]["callee"]: r["body"]["payload"] for r in results}


def test_recordings_uploaded_verified_and_not_created_d_rec_2_d_res_2(
    scene: Scenario, s3_client: Any
) -> None:
    prefix = f"it-flow-{uuid.uuid4().hex[:8]}"
    scene.sip()
    scene.task("task-rec", ring_timeout_ms=5000)
    scene.quota()
    scene.start(**s3_env(prefix))
    callees = ["15000000001", "15000000002", "15000000003", "15000000004", "15000000005"]
    ids = scene.calls("task-rec", callees=callees)
    results = scene.wait_results(5, timeout=40, event_type="call.result")
    payloads = by_callee(results)
    assert all(r["valid"] for r in results), [r["errors"] for r in results]
    assert scene.summary()["duplicates"] == {}  # D-RES-1: one event_id per call

    talked = payloads["15000000001"]
    rec = talked["recording"]
    assert (talked["outcome"], rec["status"]) == ("answered", "uploaded")
    assert rec["object_key"] == f"{prefix}/tenant-1/task-rec/{talked['call_id']}.wav"
    body = s3_client.get_object(Bucket=rec["bucket"], Key=rec["object_key"])["Body"].read()
    assert len(body) == rec["size_bytes"] and body[:4] == b"RIFF"
    assert hashlib.sha256(body).hexdigest() == rec["checksum_sha256"]  # verified by the D
    assert talked["transcript"], "D-RES-1: the final transcript travels with the result"

    opted = payloads["15000000003"]
    assert opted["opt_out"] is True and opted["recording"]["status"] == "uploaded"
    assert payloads["15000000002"]["recording"]["status"] == "not_created"  # busy
    assert payloads["15000000002"]["outcome"] == "busy"
    assert payloads["15000000005"]["recording"]["status"] == "not_created"  # no answer
    assert payloads["15000000004"]["recording"]["status"] == "not_created"  # none produced

    dialled = [
        e for e in originate_log(scene.cell.data) if e.get("call_id") in payloads_ids(payloads)
    ]
    assert len(dialled) == len(ids)  # every command dialled exactly once
    status = scene.status()
    assert status["executions"]["finalized"] == 5
    assert scene.secret not in scene.log()
    assert s3_settings().secret_key not in scene.log()


def payloads_ids(payloads: dict[str, dict[str, Any]]) -> set[str]:
    return {p["call_id"] for p in payloads.values()}


def test_refused_signature_is_unavailable_at_once_outcome_kept_d_rec_2(
    scene: Scenario, s3_client: Any
) -> None:
    """A wrong storage secret: the server refuses the PUT; the result says so right away,
    long before the deadline, and the call's outcome stays ``answered`` (D-RES-2)."""
    scene.sip()
    scene.task("task-bad", ring_timeout_ms=5000)
    scene.quota()
    prefix = f"it-bad-{uuid.uuid4().hex[:8]}"
    scene.start(
        **s3_env(
            prefix, DISPATCHER_S3_SECRET_KEY="wrong-secret", DISPATCHER_RECORDING_DEADLINE_S="600"
        )
    )
    scene.calls("task-bad", callees=["15000000011"])
    (result,) = scene.wait_results(1, timeout=30, event_type="call.result")
    payload = result["body"]["payload"]
    rec = payload["recording"]
    assert (payload["outcome"], rec["status"], rec["error_code"]) == (
        "answered",
        "unavailable",
        "upload_authorization_failed",
    )
    assert rec["bucket"] is None and rec["checksum_sha256"] is None and result["valid"]
    listing = s3_client.list_objects_v2(Bucket=s3_settings().bucket, Prefix=prefix)
    assert listing.get("KeyCount", 0) == 0
