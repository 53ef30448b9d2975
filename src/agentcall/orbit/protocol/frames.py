"""Reading a worker's text frame (worker-protocol.md §2.1): one message object, or with the
batch subprotocol a JSON array of 1-256 message objects. Pure."""

from __future__ import annotations

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.strictjson import read_json_text
from agentcall.orbit.protocol.framing import MAX_BATCH
from agentcall.orbit.protocol.messages import MAX_MESSAGE_BYTES


def read_frame(text: str, batching: bool) -> list[JsonValue]:
    """The frame's messages in order; InvalidArgument for an oversized or malformed frame (an
    array only counts as a batch when the batch subprotocol was agreed)."""
    if len(text) > MAX_MESSAGE_BYTES or len(text.encode("utf-8")) > MAX_MESSAGE_BYTES:
        raise InvalidArgument(f"message larger than {MAX_MESSAGE_BYTES} bytes")
    value = read_json_text(text)
    if not isinstance(value, list) or not batching:
        return [value]
    if not 1 <= len(value) <= MAX_BATCH:
        raise InvalidArgument(f"a batch frame holds 1-{MAX_BATCH} messages", "frame")
    return value
