"""Prometheus's own checks, run by the suite: `promtool check metrics` on a real `/metrics`
exposition and `promtool check rules` on rule files (the Debian package `prometheus`,
listed in scripts/debian-packages.txt), and the metric names a PromQL expression reads,
checked against what a service really exports."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

PREFIXES = ("dispatcher_", "orbit_", "cell_")
# a metric name in an expression: a service prefix, not inside a string or a label matcher
NAME = re.compile(r"(?<![\w\"'=~:])((?:dispatcher|orbit|cell)_[a-zA-Z0-9_]+)\b")


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:  # scripts/system-packages installs it as root; elsewhere it names it
        pytest.skip("Debian's prometheus (promtool) is not installed")
    return found


def check_metrics(text: str) -> subprocess.CompletedProcess[str]:
    """`promtool check metrics` reading `text` (exit 0: no problem found)."""
    return subprocess.run(
        [promtool(), "check", "metrics"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def check_rules(path: Path) -> subprocess.CompletedProcess[str]:
    return _run("rules", path)


def check_config(path: Path) -> subprocess.CompletedProcess[str]:
    return _run("config", path)


def _run(what: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool(), "check", what, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def exported(text: str) -> set[str]:
    """The sample names an exposition declares (`# TYPE` lines), as PromQL sees them:
    `_total` on counters, `_bucket`, `_sum` and `_count` on histograms."""
    names: set[str] = set()
    for line in text.splitlines():
        if not line.startswith("# TYPE "):
            continue
        _, _, name, kind = line.split(maxsplit=3)
        if kind == "counter":
            names |= {name if name.endswith("_total") else f"{name}_total"}
        elif kind in ("histogram", "summary"):
            names |= {f"{name}_bucket", f"{name}_sum", f"{name}_count", name}
        else:
            names.add(name)
    return names


def names_in(expr: str) -> set[str]:
    """The service metric names a PromQL expression reads."""
    without_strings = re.sub(r"\"[^\"]*\"|'[^']*'", '""', expr)
    return set(NAME.findall(without_strings))
