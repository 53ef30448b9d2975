"""The queue page's search (docs/orbit/search.md, "Console"): its query string is the API's
search filter (`agentcall.orbit.domain.search`) with the same names, so a URL holds the
filter and can be shared; each set field becomes a chip whose link is the same URL without it.

The form sends the business key with `key_match` (`exact` or `prefix`), which becomes
`business_key` or `business_key_prefix`; empty fields are ignored, and the page redirects to
the filter's own query string (the API's names, in a fixed order)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlencode

from starlette.requests import Request

from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.search import FILTER_FIELDS, TaskFilter, filter_json, parse_filter

# the order of the form's fields and chips, with their labels
LABELS = {
    "business_key": "business key",
    "business_key_prefix": "business key starts with",
    "state": "state",
    "handler": "handler",
    "handler_version": "version",
    "error_code": "error code",
    "created_from": "created from",
    "created_before": "created before",
    "completed_from": "completed from",
    "completed_before": "completed before",
}
PARAMS = (FILTER_FIELDS - {"queue_id"}) | {"cursor", "key_match"}
assert set(LABELS) == FILTER_FIELDS - {"queue_id"}


@dataclass(frozen=True, slots=True)
class Chip:
    field: str
    label: str
    value: str
    remove: str  # the page's URL without this field


@dataclass(frozen=True, slots=True)
class Search:
    where: TaskFilter
    cursor: str | None
    values: dict[str, str]  # the filter's fields as the query string names them
    chips: list[Chip]

    @property
    def key(self) -> str:
        return self.values.get("business_key") or self.values.get("business_key_prefix", "")

    @property
    def prefix(self) -> bool:
        return "business_key_prefix" in self.values

    def href(self, **extra: str) -> str:
        """This search's query string (with `extra`, e.g. the next page's cursor)."""
        query = urlencode({**self.values, **extra})
        return f"?{query}" if query else "?"


def read_search(request: Request, queue_id: str) -> Search:
    """The filter of a queue page's URL; a repeated or unknown parameter, or a value the API
    would refuse, is an InvalidArgument naming it."""
    return search_of(request.query_params.multi_items(), queue_id)


def search_of(items: Iterable[tuple[str, str]], queue_id: str) -> Search:
    """The filter of these query (or form) fields, as `read_search` reads a URL's."""
    given: dict[str, str] = {}
    for name, value in items:
        if name not in PARAMS or name in given:
            raise InvalidArgument("unknown or repeated query parameter", name)
        given[name] = value
    cursor = given.pop("cursor", "") or None
    match = given.pop("key_match", "exact")
    if match not in ("exact", "prefix"):
        raise InvalidArgument("must be exact or prefix", "key_match")
    if match == "prefix" and given.get("business_key"):
        given["business_key_prefix"] = given.pop("business_key")
    fields = {name: value for name, value in given.items() if value != ""}
    where = parse_filter({"queue_id": queue_id, **fields})
    values = {name: str(v) for name, v in filter_json(where).items() if name != "queue_id"}
    values = {name: values[name] for name in LABELS if name in values}
    chips = [
        Chip(name, LABELS[name], value, _without(values, name)) for name, value in values.items()
    ]
    return Search(where, cursor, values, chips)


def refused(request: Request, queue_id: str) -> Search:
    """What the form shows again after its filter was refused: the fields as typed, no chip."""
    typed = {k: v for k, v in request.query_params.items() if k in LABELS and v}
    return Search(TaskFilter(queue_id), None, typed, [])


def _without(values: dict[str, str], name: str) -> str:
    rest = {k: v for k, v in values.items() if k != name}
    if name == "handler":  # a version belongs to one handler: it goes with it
        rest.pop("handler_version", None)
    return f"?{urlencode(rest)}" if rest else "?"
