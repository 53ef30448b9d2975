"""Prometheus naming rules, checked on a real ``/metrics`` exposition.

The text is parsed with ``prometheus_client.parser.text_string_to_metric_families``; each
rule looks at one metric family and returns what is wrong with it (None: nothing). The
parser adds ``_total`` to counter samples and merges repeated families, so those two
rules also read the sample names and ``# TYPE`` lines of the raw text. The
rules follow the Prometheus naming conventions: snake_case names with the service's
prefix, counters ending ``_total``, base units (``_seconds``, ``_bytes``, ``_ratio``; no
``_ms``), histograms with ``_bucket`` (up to ``+Inf``), ``_sum`` and ``_count``, help
text on every family.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

Family = Any  # prometheus_client.metrics_core.Metric


@dataclass(frozen=True)
class Context:
    prefixes: tuple[str, ...]
    raw_samples: frozenset[str]  # sample names as written in the text


Rule = Callable[[Family, Context], str | None]

SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
# Units that are not base units, and what to use instead.
NOT_BASE = {
    "ms": "seconds",
    "milliseconds": "seconds",
    "us": "seconds",
    "microseconds": "seconds",
    "ns": "seconds",
    "minutes": "seconds",
    "hours": "seconds",
    "days": "seconds",
    "kb": "bytes",
    "kilobytes": "bytes",
    "mb": "bytes",
    "megabytes": "bytes",
    "percent": "ratio",
    "pct": "ratio",
}


def snake_case(f: Family, ctx: Context) -> str | None:
    bad = [n for n in (f.name, *_labels(f)) if not SNAKE.fullmatch(n) and n != "le"]
    return f"not snake_case: {', '.join(bad)}" if bad else None


def prefixed(f: Family, ctx: Context) -> str | None:
    prefixes = ctx.prefixes
    return None if f.name.startswith(prefixes) else f"does not start with {' or '.join(prefixes)}"


def counter_total(f: Family, ctx: Context) -> str | None:
    if f.type != "counter":
        return None
    written = {s.name.removesuffix("_total") for s in f.samples} & ctx.raw_samples
    bad = sorted(name for name in written if not name.endswith("_created"))
    return f"counter samples without _total: {', '.join(bad)}" if bad else None


def gauge_not_total(f: Family, ctx: Context) -> str | None:
    if f.type == "gauge" and f.name.endswith("_total"):
        return "a gauge named _total (counters only)"
    return None


def base_units(f: Family, ctx: Context) -> str | None:
    words = f.name.split("_")
    bad = [f"_{w} (use _{NOT_BASE[w]})" for w in words if w in NOT_BASE]
    return f"not a base unit: {', '.join(bad)}" if bad else None


def histogram_series(f: Family, ctx: Context) -> str | None:
    if f.type != "histogram":
        return None
    names = {s.name for s in f.samples}
    wanted = {f"{f.name}_bucket", f"{f.name}_sum", f"{f.name}_count"}
    missing = sorted(wanted - names)
    inf = any(s.name == f"{f.name}_bucket" and s.labels.get("le") == "+Inf" for s in f.samples)
    if missing or not inf:
        return f"histogram without {', '.join(missing) or 'a +Inf bucket'}"
    return None


def help_text(f: Family, ctx: Context) -> str | None:
    return None if (f.documentation or "").strip() else "no help text"


RULES: tuple[tuple[str, Rule], ...] = (
    ("snake_case", snake_case),
    ("prefix", prefixed),
    ("counter_total", counter_total),
    ("gauge_not_total", gauge_not_total),
    ("base_units", base_units),
    ("histogram_series", histogram_series),
    ("help_text", help_text),
)


def _labels(f: Family) -> Iterable[str]:
    return sorted({label for s in f.samples for label in s.labels})


def families(text: str) -> list[Family]:
    return list(text_string_to_metric_families(text))


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition: (name, sorted labels) to its value."""
    return {
        (x.name, tuple(sorted(x.labels.items()))): x.value
        for f in families(text)
        for x in f.samples
    }


def violations(text: str, prefixes: tuple[str, ...]) -> list[str]:
    """``family: rule: what is wrong`` for every rule a family breaks, and every family
    declared twice."""
    lines = [line for line in text.splitlines() if line.strip()]
    samples = frozenset(
        re.split(r"[{ ]", line, maxsplit=1)[0] for line in lines if not line.startswith("#")
    )
    declared = Counter(line.split()[2] for line in lines if line.startswith("# TYPE "))
    found = [f"{name}: unique: declared {n} times" for name, n in declared.items() if n > 1]
    ctx = Context(prefixes, samples)
    for f in families(text):
        for rule, check in RULES:
            problem = check(f, ctx)
            if problem is not None:
                found.append(f"{f.name}: {rule}: {problem}")
    return found
