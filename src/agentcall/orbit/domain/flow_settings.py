"""Flow-control settings of a queue and the flow fields of a task (docs/orbit/flow-control.md):
what `PATCH /v1/queues/{id}` accepts and what `POST /v1/tasks` adds. Pure.

A queue's settings: `max_running_per_key` (a default limit for every concurrency key),
`key_limits` (the first glob pattern that matches a key sets its limit instead), `rate`
(a token bucket: `per_second` tokens, at most `burst` saved, one bucket for the queue or one
per concurrency key) and `fairness` (round-robin over fairness keys by weight). A queue with
none of them set has no flow control: its leases take the fast path unchanged."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.fields import ObjectReader
from agentcall.orbit.domain.jsonvalue import JsonNumber, JsonValue
from agentcall.orbit.domain.numbers import parse_uint64

MIN_PRIORITY = 1
MAX_PRIORITY = 9
DEFAULT_PRIORITY = 5  # the middle of the range
MAX_KEY_CHARS = 191  # like business_key
MAX_WEIGHT = 100
DEFAULT_WEIGHT = 1
MAX_RUNNING_PER_KEY = 100_000
MAX_KEY_LIMITS = 32
MAX_RATE_PER_SECOND = 100_000
MAX_BURST = 1_000_000

SETTINGS_FIELDS = frozenset({"max_running_per_key", "key_limits", "rate", "fairness"})
KEY_LIMIT_FIELDS = frozenset({"pattern", "max_running"})
RATE_FIELDS = frozenset({"per_second", "burst", "per_key"})
PATCH_FIELDS = frozenset({"expected_revision", "flow"})


@dataclass(frozen=True, slots=True)
class KeyLimit:
    pattern: str  # a glob (fnmatch, case-sensitive) over concurrency keys
    max_running: int


@dataclass(frozen=True, slots=True)
class RateLimit:
    per_second: int
    burst: int
    per_key: bool = False


@dataclass(frozen=True, slots=True)
class FlowSettings:
    max_running_per_key: int | None = None
    key_limits: tuple[KeyLimit, ...] = ()
    rate: RateLimit | None = None
    fairness: bool = False

    @property
    def active(self) -> bool:
        """Any rule set: the queue's leases take the flow path."""
        return bool(self.max_running_per_key or self.key_limits or self.rate or self.fairness)

    @property
    def limits_keys(self) -> bool:
        return bool(self.max_running_per_key or self.key_limits)

    @property
    def limits(self) -> bool:
        """A limit that must hold across server processes (running per key, rate): the
        queue's lease rounds are serialised on its settings row. Fairness alone is not: its
        rounds run side by side."""
        return self.limits_keys or self.rate is not None

    def limit_for(self, key: str | None) -> int | None:
        """The running limit of a concurrency key (None: unlimited; a task without a key is
        never limited by key)."""
        if key is None:
            return None
        for rule in self.key_limits:
            if fnmatch.fnmatchcase(key, rule.pattern):
                return rule.max_running
        return self.max_running_per_key


NO_FLOW = FlowSettings()


@dataclass(frozen=True, slots=True)
class QueueFlow:
    """A queue's settings as stored, with their revision (1 before any change)."""

    queue_id: str
    revision: int
    settings: FlowSettings


def settings_view(settings: FlowSettings) -> dict[str, JsonValue]:
    view: dict[str, JsonValue] = {"fairness": settings.fairness}
    if settings.max_running_per_key is not None:
        view["max_running_per_key"] = settings.max_running_per_key
    if settings.key_limits:
        view["key_limits"] = [
            {"pattern": rule.pattern, "max_running": rule.max_running}
            for rule in settings.key_limits
        ]
    if settings.rate is not None:
        rate = settings.rate
        view["rate"] = {"per_second": rate.per_second, "burst": rate.burst, "per_key": rate.per_key}
    return view


def parse_settings(value: JsonValue, prefix: str = "flow.") -> FlowSettings:
    """The whole settings object (strict: unknown fields, nulls and out-of-range values are
    refused; an omitted rule is off)."""
    fields = ObjectReader(value, SETTINGS_FIELDS, prefix)
    fairness = fields.raw("fairness")
    if fairness is not None and not isinstance(fairness, bool):
        raise InvalidArgument("must be true or false", fields.name("fairness"))
    return FlowSettings(
        max_running_per_key=_bounded(fields, "max_running_per_key", MAX_RUNNING_PER_KEY),
        key_limits=_key_limits(fields),
        rate=_rate(fields),
        fairness=bool(fairness),
    )


def parse_patch(body: JsonValue) -> tuple[int, FlowSettings]:
    """`PATCH /v1/queues/{id}`: {"expected_revision": "<decimal>", "flow": {...}}."""
    fields = ObjectReader(body, PATCH_FIELDS)
    revision = fields.raw("expected_revision", required=True)
    if not isinstance(revision, str) or not revision.isascii() or not revision.isdigit():
        raise InvalidArgument("must be a decimal string", "expected_revision")
    if len(revision) > 19 or revision.startswith("0"):
        raise InvalidArgument("must be a canonical decimal revision", "expected_revision")
    return int(revision), parse_settings(fields.raw("flow", required=True))


def _bounded(fields: ObjectReader, key: str, maximum: int, *, required: bool = False) -> int | None:
    if not fields.present(key):
        if required:
            raise InvalidArgument("is required", fields.name(key))
        return None
    value = _integer(fields.raw(key), fields.name(key))
    if not 1 <= value <= maximum:
        raise InvalidArgument(f"must be 1-{maximum}", fields.name(key))
    return value


def _key_limits(fields: ObjectReader) -> tuple[KeyLimit, ...]:
    items = fields.raw("key_limits")
    if items is None:
        return ()
    if not isinstance(items, list) or len(items) > MAX_KEY_LIMITS:
        raise InvalidArgument(f"must be a list of at most {MAX_KEY_LIMITS}", "flow.key_limits")
    rules = []
    for index, item in enumerate(items):
        rule = ObjectReader(item, KEY_LIMIT_FIELDS, f"flow.key_limits[{index}].")
        pattern = rule.string("pattern", required=True, max_chars=MAX_KEY_CHARS)
        assert pattern is not None
        limit = _bounded(rule, "max_running", MAX_RUNNING_PER_KEY, required=True)
        assert limit is not None
        rules.append(KeyLimit(pattern, limit))
    return tuple(rules)


def _rate(fields: ObjectReader) -> RateLimit | None:
    value = fields.raw("rate")
    if value is None:
        return None
    rate = ObjectReader(value, RATE_FIELDS, "flow.rate.")
    per_second = _bounded(rate, "per_second", MAX_RATE_PER_SECOND, required=True)
    assert per_second is not None
    burst = _bounded(rate, "burst", MAX_BURST) or per_second
    per_key = rate.raw("per_key")
    if per_key is not None and not isinstance(per_key, bool):
        raise InvalidArgument("must be true or false", "flow.rate.per_key")
    return RateLimit(per_second, burst, bool(per_key))


# ---------------------------------------------------------------------- task fields
TASK_FIELDS = frozenset({"priority", "concurrency_key", "fairness_key", "fairness_weight"})


@dataclass(frozen=True, slots=True)
class TaskFlow:
    """The flow fields of a submitted task, defaults applied."""

    priority: int = DEFAULT_PRIORITY
    concurrency_key: str | None = None
    fairness_key: str | None = None
    fairness_weight: int = DEFAULT_WEIGHT


DEFAULT_TASK_FLOW = TaskFlow()


def parse_task_flow(fields: ObjectReader) -> TaskFlow:
    """The flow fields of a submit body (already checked for unknown fields); the common
    submit without any of them returns the shared default."""
    if not any(fields.present(key) for key in TASK_FIELDS):
        return DEFAULT_TASK_FLOW
    priority = _small(fields, "priority", MIN_PRIORITY, MAX_PRIORITY, DEFAULT_PRIORITY)
    weight = _small(fields, "fairness_weight", 1, MAX_WEIGHT, DEFAULT_WEIGHT)
    return TaskFlow(priority, _key(fields, "concurrency_key"), _key(fields, "fairness_key"), weight)


def _small(fields: ObjectReader, key: str, low: int, high: int, default: int) -> int:
    if not fields.present(key):
        return default
    number = _integer(fields.raw(key), key)
    if not low <= number <= high:
        raise InvalidArgument(f"must be an integer {low}-{high}", key)
    return number


def _integer(value: JsonValue, field: str) -> int:
    """A non-negative JSON integer literal (or an int, when settings are read back)."""
    if type(value) is int:
        return value if value >= 0 else -1
    if isinstance(value, JsonNumber):
        return parse_uint64(value, field)
    raise InvalidArgument("must be an integer", field)


def _key(fields: ObjectReader, key: str) -> str | None:
    value = fields.string(key, required=False, max_chars=MAX_KEY_CHARS)
    if value is not None and any(char in value for char in "\x00\n\r"):
        raise InvalidArgument("must not contain NUL or line breaks", key)
    return value
