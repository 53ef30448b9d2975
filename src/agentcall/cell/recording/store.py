"""Recordings on disk under ``<data-dir>/recordings``: ``<call_id>.wav`` plus a
``<call_id>.json`` sidecar (who wrote it, whether it is complete, its upload).

The sidecar is replaced atomically; upload states are also fsynced, in particular
*before* a PUT starts, so a crash mid-upload is remembered and the PUT is never
started again.
At start-up :meth:`RecordingStore.recover` repairs recordings a killed process
left half-written and marks interrupted uploads ``unknown``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from agentcall.cell.domain.errors import RecordingNotFoundError, UploadNotAllowedError
from agentcall.cell.recording.wav import WavInfo, WavWriter, repair_wav


class UploadStatus(StrEnum):
    STARTED = "started"  # PUT in flight (or the process died during it)
    UPLOADED = "uploaded"
    FAILED = "failed"
    EXPIRED = "expired"  # authorization expired: nothing stored, may be re-authorized
    UNKNOWN = "unknown"  # the cell died during the PUT: never retried


@dataclass(frozen=True)
class UploadState:
    upload_id: str
    status: UploadStatus
    started_at: str
    put_started: bool = False
    finished_at: str | None = None
    http_status: int | None = None
    error_code: str | None = None
    message: str | None = None
    expires_at: str | None = None
    etag: str | None = None


@dataclass(frozen=True)
class RecordingMeta:
    call_id: str
    boot_id: str
    created_at: str
    complete: bool = False
    partial: bool = False
    size_bytes: int | None = None
    sha256: str | None = None
    duration_ms: int | None = None
    upload: UploadState | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> RecordingMeta:
        upload = obj.get("upload")
        fields = {k: v for k, v in obj.items() if k in RecordingMeta.__dataclass_fields__}
        fields["upload"] = (
            UploadState(**{**upload, "status": UploadStatus(upload["status"])}) if upload else None
        )
        return RecordingMeta(**fields)


def _write_json(path: Path, obj: Mapping[str, Any], durable: bool) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        json.dump(obj, f, sort_keys=True)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


class RecordingStore:
    def __init__(self, root: Path, boot_id: str) -> None:
        self.root = root
        self.boot_id = boot_id
        root.mkdir(parents=True, exist_ok=True)

    def wav_path(self, call_id: str) -> Path:
        return self.root / f"{call_id}.wav"

    def _meta_path(self, call_id: str) -> Path:
        return self.root / f"{call_id}.json"

    def _save(self, meta: RecordingMeta, durable: bool = False) -> RecordingMeta:
        """Write the sidecar; ``durable`` (fsync) where a lost write could repeat a PUT."""
        _write_json(self._meta_path(meta.call_id), meta.to_json(), durable)
        return meta

    def open(self, call_id: str, created_at: str) -> WavWriter:
        """Start the recording of a call (the sidecar first, then the WAV)."""
        self._save(RecordingMeta(call_id=call_id, boot_id=self.boot_id, created_at=created_at))
        return WavWriter(self.wav_path(call_id))

    def finish(self, call_id: str, info: WavInfo, *, partial: bool = False) -> RecordingMeta:
        meta = replace(
            self.get(call_id),
            complete=True,
            partial=partial,
            size_bytes=info.size_bytes,
            sha256=info.sha256,
            duration_ms=info.duration_ms,
        )
        return self._save(meta)

    def get(self, call_id: str) -> RecordingMeta:
        path = self._meta_path(call_id)
        try:
            return RecordingMeta.from_json(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            raise RecordingNotFoundError(f"no recording for call {call_id}") from None

    def exists(self, call_id: str) -> bool:
        return self._meta_path(call_id).exists() and self.wav_path(call_id).exists()

    def all(self) -> Iterator[RecordingMeta]:
        for path in sorted(self.root.glob("*.json")):
            yield self.get(path.stem)

    def delete(self, call_id: str) -> None:
        self.get(call_id)  # raises if unknown
        self.wav_path(call_id).unlink(missing_ok=True)
        self._meta_path(call_id).unlink(missing_ok=True)

    def begin_upload(self, call_id: str, upload_id: str, at: str) -> RecordingMeta:
        """Record (durably) that an upload starts; refuses any second PUT."""
        meta = self.get(call_id)
        if not meta.complete:
            raise UploadNotAllowedError(f"recording of call {call_id} is still being written")
        previous = meta.upload
        if previous is not None:
            retry_ok = previous.status is UploadStatus.EXPIRED and previous.upload_id == upload_id
            if not retry_ok:
                raise UploadNotAllowedError(
                    f"recording of call {call_id} already has upload {previous.upload_id} "
                    f"({previous.status.value}); a PUT is never retried"
                )
        state = UploadState(upload_id=upload_id, status=UploadStatus.STARTED, started_at=at)
        return self._save(replace(meta, upload=state), durable=True)

    def settle_upload(self, call_id: str, state: UploadState) -> RecordingMeta:
        return self._save(replace(self.get(call_id), upload=state), durable=True)

    def recover(self) -> list[RecordingMeta]:
        """Repair what a killed process left behind; returns the recordings touched."""
        touched = []
        for wav in sorted(self.root.glob("*.wav")):
            if not self._meta_path(wav.stem).exists():
                self._save(RecordingMeta(call_id=wav.stem, boot_id="unknown", created_at=""))
        for meta in list(self.all()):
            fixed = self._recover_one(meta)
            if fixed is not meta:
                touched.append(fixed)
        return touched

    def _recover_one(self, meta: RecordingMeta) -> RecordingMeta:
        wav = self.wav_path(meta.call_id)
        if not wav.exists():
            self._meta_path(meta.call_id).unlink(missing_ok=True)
            return replace(meta, complete=False)
        fixed = meta
        if not meta.complete:
            fixed = self.finish(meta.call_id, repair_wav(wav), partial=True)
        if fixed.upload is not None and fixed.upload.status is UploadStatus.STARTED:
            upload = replace(fixed.upload, status=UploadStatus.UNKNOWN, put_started=True)
            fixed = self._save(replace(fixed, upload=upload))
        return fixed
