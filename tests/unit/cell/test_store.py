"""Recording store and originate log: what survives a killed process (D-REC-1 at most one PUT)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agentcall.cell.audio.synth import tone_speech
from agentcall.cell.domain.errors import RecordingNotFoundError, UploadNotAllowedError
from agentcall.cell.recording.store import RecordingStore, UploadState, UploadStatus
from agentcall.cell.state.originate_log import OriginateLog, read_entries


def _recorded(store: RecordingStore, call_id: str, ms: int = 500, finish: bool = True) -> None:
    writer = store.open(call_id, "2026-09-21T00:00:00.000Z")
    writer.append(tone_speech(ms, 400))
    if finish:
        store.finish(call_id, writer.close())


def test_finished_recording_is_described(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path, "boot-1")
    _recorded(store, "c1")
    meta = store.get("c1")
    assert meta.complete and not meta.partial
    assert meta.duration_ms == 500 and meta.size_bytes == 44 + 8000
    assert meta.boot_id == "boot-1"


def test_unfinished_recording_is_repaired_as_partial_after_a_crash(tmp_path: Path) -> None:
    _recorded(RecordingStore(tmp_path, "boot-1"), "c1", ms=700, finish=False)  # "SIGKILL"
    store = RecordingStore(tmp_path, "boot-2")
    touched = store.recover()
    assert [m.call_id for m in touched] == ["c1"]
    meta = store.get("c1")
    assert meta.complete and meta.partial and meta.duration_ms == 700
    assert meta.boot_id == "boot-1"


def test_wav_without_sidecar_is_adopted(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path, "b")
    _recorded(store, "c1")
    (tmp_path / "c1.json").unlink()
    store.recover()
    assert store.get("c1").partial and store.get("c1").boot_id == "unknown"


@pytest.mark.parametrize(
    ("first", "second_id", "allowed"),
    [
        (UploadStatus.EXPIRED, "u1", True),  # re-authorization of the same upload_id
        (UploadStatus.EXPIRED, "u2", False),  # never a second asset
        (UploadStatus.UPLOADED, "u1", False),
        (UploadStatus.FAILED, "u1", False),
        (UploadStatus.STARTED, "u1", False),
        (UploadStatus.UNKNOWN, "u1", False),
    ],
)
def test_a_put_is_never_started_twice_d_rec_1(
    tmp_path: Path, first: UploadStatus, second_id: str, allowed: bool
) -> None:
    """D-REC-1: at most one PUT per recording/upload_id; only an unused expired one is replaced."""
    store = RecordingStore(tmp_path, "b")
    _recorded(store, "c1")
    started = store.begin_upload("c1", "u1", "t0").upload
    assert started is not None and started.status is UploadStatus.STARTED
    store.settle_upload("c1", UploadState("u1", first, "t0"))
    if allowed:
        assert store.begin_upload("c1", second_id, "t1").upload is not None
    else:
        with pytest.raises(UploadNotAllowedError):
            store.begin_upload("c1", second_id, "t1")


def test_upload_interrupted_by_a_crash_becomes_unknown_and_is_never_retried(
    tmp_path: Path,
) -> None:
    _recorded(RecordingStore(tmp_path, "b1"), "c1")
    RecordingStore(tmp_path, "b1").begin_upload("c1", "u1", "t0")  # then SIGKILL mid-PUT
    store = RecordingStore(tmp_path, "b2")
    store.recover()
    upload = store.get("c1").upload
    assert upload is not None and upload.status is UploadStatus.UNKNOWN and upload.put_started
    with pytest.raises(UploadNotAllowedError):
        store.begin_upload("c1", "u1", "t1")


def test_upload_of_a_recording_still_being_written_is_refused(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path, "b")
    _recorded(store, "c1", finish=False)
    with pytest.raises(UploadNotAllowedError, match="still being written"):
        store.begin_upload("c1", "u1", "t0")


def test_delete_and_unknown(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path, "b")
    _recorded(store, "c1")
    store.delete("c1")
    assert not store.exists("c1") and list(tmp_path.iterdir()) == []
    with pytest.raises(RecordingNotFoundError):
        store.get("c1")


async def test_originate_log_survives_restart_and_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "originate.log"
    log = OriginateLog(path, create=True)
    await log.append({"call_id": "a", "callee": "1"})
    await log.aclose()
    with path.open("ab") as f:
        f.write(b'{"call_id": "b", "cal')  # killed mid-write: b was never dialled
    log = OriginateLog(path, create=True)
    assert log.dialled == {"a"}
    await log.append({"call_id": "c", "callee": "3"})
    await log.aclose()
    assert [e["call_id"] for e in read_entries(path)] == ["a", "c"]
    assert json.loads(path.read_text().splitlines()[-1])["callee"] == "3"


async def test_concurrent_appends_share_writes_and_all_land(tmp_path: Path) -> None:
    path = tmp_path / "originate.log"
    log = OriginateLog(path, create=True)
    await asyncio.gather(*(log.append({"call_id": f"c{i}"}) for i in range(50)))
    await log.aclose()
    assert sorted(e["call_id"] for e in read_entries(path)) == sorted(f"c{i}" for i in range(50))
    assert log.dialled == {f"c{i}" for i in range(50)}
