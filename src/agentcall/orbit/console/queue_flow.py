"""The flow-control part of the console's queue page (docs/orbit/flow-control.md): the form an
admin (queues:admin) sends to replace a queue's flow settings, read into the same strict body
as `PATCH /v1/queues/{id}` (`agentcall.orbit.domain.flow_settings.parse_patch` checks it), and
the settings as the form shows them.

Form fields: `revision` (the settings' revision the page was rendered with),
`max_running_per_key`, `key_limits` (one `pattern = limit` per line), `rate_per_second`,
`rate_burst`, `rate_per_key` and `fairness` (checkboxes). An empty number turns its rule off."""

from __future__ import annotations

from dataclasses import dataclass

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.flow_settings import MAX_KEY_LIMITS, FlowSettings
from agentcall.orbit.domain.jsonvalue import JsonValue

MAX_NUMBER_CHARS = 9


def _number(form: dict[str, str], name: str, field: str) -> int | None:
    text = form.get(name, "").strip()
    if not text:
        return None
    if not text.isascii() or not text.isdigit() or len(text) > MAX_NUMBER_CHARS:
        raise InvalidArgument("must be a whole number", field)
    return int(text)


def _key_limits(text: str) -> list[JsonValue]:
    rules: list[JsonValue] = []
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > MAX_KEY_LIMITS:
        raise InvalidArgument(f"must be a list of at most {MAX_KEY_LIMITS}", "flow.key_limits")
    for index, line in enumerate(lines):
        pattern, equals, limit = line.rpartition("=")
        field = f"flow.key_limits[{index}]"
        if not equals or not pattern.strip():
            raise InvalidArgument("write one `pattern = limit` per line", field)
        number = _number({"limit": limit}, "limit", f"{field}.max_running")
        if number is None:
            raise InvalidArgument("write one `pattern = limit` per line", field)
        rules.append({"pattern": pattern.strip(), "max_running": number})
    return rules


def patch_body(form: dict[str, str]) -> dict[str, JsonValue]:
    """The `PATCH /v1/queues/{id}` body the form stands for."""
    flow: dict[str, JsonValue] = {"fairness": form.get("fairness") == "on"}
    most = _number(form, "max_running_per_key", "flow.max_running_per_key")
    if most is not None:
        flow["max_running_per_key"] = most
    rules = _key_limits(form.get("key_limits", ""))
    if rules:
        flow["key_limits"] = rules
    per_second = _number(form, "rate_per_second", "flow.rate.per_second")
    burst = _number(form, "rate_burst", "flow.rate.burst")
    if per_second is not None:
        rate: dict[str, JsonValue] = {"per_second": per_second}
        if burst is not None:
            rate["burst"] = burst
        rate["per_key"] = form.get("rate_per_key") == "on"
        flow["rate"] = rate
    elif burst is not None:
        raise InvalidArgument("is required with a burst", "flow.rate.per_second")
    return {"expected_revision": form.get("revision", ""), "flow": flow}


@dataclass(frozen=True, slots=True)
class FlowForm:
    """The settings as the form's fields show them."""

    max_running_per_key: str
    key_limits: str
    rate_per_second: str
    rate_burst: str
    rate_per_key: bool
    fairness: bool


def form_of(settings: FlowSettings) -> FlowForm:
    rate = settings.rate
    return FlowForm(
        "" if settings.max_running_per_key is None else str(settings.max_running_per_key),
        "\n".join(f"{rule.pattern} = {rule.max_running}" for rule in settings.key_limits),
        "" if rate is None else str(rate.per_second),
        "" if rate is None else str(rate.burst),
        rate is not None and rate.per_key,
        settings.fairness,
    )


def sent(form: dict[str, str]) -> FlowForm:
    """What the form was sent with (shown again with the reason it was refused)."""
    return FlowForm(
        form.get("max_running_per_key", ""),
        form.get("key_limits", ""),
        form.get("rate_per_second", ""),
        form.get("rate_burst", ""),
        form.get("rate_per_key") == "on",
        form.get("fairness") == "on",
    )
