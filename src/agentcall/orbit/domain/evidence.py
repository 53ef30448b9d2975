"""Results, worker errors and evidence items as sent by workers (worker-protocol.md §3.6-3.7),
validated strictly. A result is kept as compact exact JSON text (≤ 256 KiB, like a payload);
an evidence item carries a digest so that a resend of the same key is recognised."""

from __future__ import annotations

import enum
import hashlib
import re
from dataclasses import dataclass

from agentcall.orbit.domain.canonical import canonical_text
from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.fields import ObjectReader
from agentcall.orbit.domain.jsonvalue import JsonValue, dumps
from agentcall.orbit.domain.numbers import parse_uint64
from agentcall.orbit.domain.worker_errors import InvalidResult

MAX_RESULT_BYTES = 262_144
MAX_EVIDENCE_DATA_BYTES = 16_384
MAX_EVIDENCE_ITEMS = 100
MAX_ERROR_MESSAGE_CHARS = 1024
_CODE = re.compile(r"[A-Za-z0-9_.:-]{1,64}\Z")
_KEY = re.compile(r"[A-Za-z0-9_.:-]{1,128}\Z")
_SHA256 = re.compile(r"[0-9a-f]{64}\Z")


@dataclass(frozen=True, slots=True)
class WorkerError:
    code: str
    message: str
    retryable: bool | None  # None for needs_review


class EvidenceKind(enum.StrEnum):
    ARTIFACT = "artifact"
    REFERENCE = "reference"
    NOTE = "note"


_KINDS = frozenset(k.value for k in EvidenceKind)


@dataclass(frozen=True, slots=True)
class EvidenceItem:
    key: str
    kind: EvidenceKind
    name: str | None
    uri: str | None
    media_type: str | None
    size_bytes: int | None
    sha256: str | None
    data_text: str | None

    @property
    def digest(self) -> str:
        """SHA-256 of the item's canonical content: equal for a resend of the same item."""
        document: dict[str, JsonValue] = {
            "key": self.key,
            "kind": self.kind.value,
            "name": self.name,
            "uri": self.uri,
            "media_type": self.media_type,
            "size_bytes": self.size_bytes,
            "sha256": self.sha256,
            "data": self.data_text,
        }
        return hashlib.sha256(canonical_text(document).encode("utf-8")).hexdigest()


def read_result(value: JsonValue) -> str:
    """The `result` of a succeeded outcome as compact exact JSON text."""
    if value is None:
        raise InvalidResult("result: required and must not be null for outcome succeeded")
    text = dumps(value)
    if len(text.encode("utf-8")) > MAX_RESULT_BYTES:
        raise InvalidResult(
            f"result: compact JSON encoding exceeds {MAX_RESULT_BYTES} bytes; store the output "
            "elsewhere and return a reference"
        )
    return text


def read_error(value: JsonValue, failed: bool) -> WorkerError:
    allowed = {"code", "message", "retryable"} if failed else {"code", "message"}
    fields = ObjectReader(value, frozenset(allowed), "error.")
    code = fields.raw("code", required=True)
    if not isinstance(code, str) or not _CODE.match(code):
        raise InvalidArgument("must be 1-64 characters of [A-Za-z0-9_.:-]", "error.code")
    message = fields.string("message", required=True, max_chars=MAX_ERROR_MESSAGE_CHARS)
    assert message is not None
    retryable: bool | None = None
    if failed:
        flag = fields.raw("retryable", required=True)
        if not isinstance(flag, bool):
            raise InvalidArgument("must be true or false", "error.retryable")
        retryable = flag
    return WorkerError(code, message, retryable)


_ITEM_FIELDS = frozenset(
    {"key", "kind", "name", "uri", "media_type", "size_bytes", "sha256", "data"}
)


def read_items(value: JsonValue, field: str, *, required: bool) -> tuple[EvidenceItem, ...]:
    if value is None:
        if required:
            raise InvalidArgument("is required", field)
        return ()
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_EVIDENCE_ITEMS:
        raise InvalidArgument(f"must be an array of 1-{MAX_EVIDENCE_ITEMS} items", field)
    items = tuple(_item(item, f"{field}[{i}].") for i, item in enumerate(value))
    if len({item.key for item in items}) != len(items):
        raise InvalidArgument("evidence keys must be distinct within a message", field)
    return items


def _item(value: JsonValue, prefix: str) -> EvidenceItem:
    fields = ObjectReader(value, _ITEM_FIELDS, prefix)
    key = _matching(fields, "key", _KEY, "1-128 characters of [A-Za-z0-9_.:-]")
    kind = fields.choice("kind", _KINDS, "must be artifact, reference or note")
    uri = fields.string("uri", required=False, max_chars=2048)
    data_text = _data(fields)
    if uri is None and data_text is None:
        raise InvalidArgument("needs at least one of uri and data", prefix.rstrip("."))
    size = fields.raw("size_bytes")
    sha = _matching(fields, "sha256", _SHA256, "64 lowercase hex", required=False)
    return EvidenceItem(
        key=key,
        kind=EvidenceKind(kind),
        name=fields.string("name", required=False, max_chars=256),
        uri=uri,
        media_type=fields.string("media_type", required=False, max_chars=128),
        size_bytes=None if size is None else parse_uint64(size, fields.name("size_bytes")),
        sha256=sha or None,
        data_text=data_text,
    )


def _matching(
    fields: ObjectReader, key: str, pattern: re.Pattern[str], rule: str, *, required: bool = True
) -> str:
    value = fields.raw(key, required=required)
    if value is None:
        return ""
    if not isinstance(value, str) or not pattern.match(value):
        raise InvalidArgument(f"must be {rule}", fields.name(key))
    return value


def _data(fields: ObjectReader) -> str | None:
    value = fields.raw("data")
    if value is None:
        return None
    text = dumps(value)
    if len(text.encode("utf-8")) > MAX_EVIDENCE_DATA_BYTES:
        raise InvalidArgument(
            f"compact JSON encoding exceeds {MAX_EVIDENCE_DATA_BYTES} bytes", fields.name("data")
        )
    return text
