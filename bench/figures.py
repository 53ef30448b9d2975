"""One measured figure of a benchmark, beside its baseline, as `make bench` collects them.

A benchmark prints its figures for a person and also hands each to :func:`record`: when it
runs under bench/run_all.py (which sets ``BENCH_FIGURES`` to a file of its own) every figure
is appended there as one JSON line, and run_all writes them all to ``var/bench/results.md``
and ``var/bench/results.json`` (bench/benchmarks_page.py). Run alone, :func:`record` writes
nothing.

A figure: its value and unit, whether higher or lower is better, the baseline measured in
the same run (and what that baseline is), the CPU time the measured processes spent per unit
of work (``cpu_ms_per_unit`` per ``per``: a task, a turn, a command), the target when there is
one, and the machine's load average when it was taken. :attr:`Figure.ratio` is oriented so
that above 1 is better than the baseline.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ENV = "BENCH_FIGURES"


def _load() -> tuple[float, float, float]:
    one, five, fifteen = os.getloadavg()
    return (round(one, 2), round(five, 2), round(fifteen, 2))


@dataclass(frozen=True)
class Figure:
    benchmark: str
    name: str
    value: float
    unit: str
    higher_is_better: bool = True
    baseline: float | None = None
    baseline_name: str | None = None
    cpu_ms_per_unit: float | None = None
    per: str | None = None
    target: str | None = None
    met: bool | None = None
    load: tuple[float, float, float] = field(default_factory=_load)

    @property
    def ratio(self) -> float | None:
        """Value against baseline, above 1 when better (inverted for lower-is-better)."""
        if self.baseline is None or self.baseline == 0 or self.value == 0:
            return None
        ratio = self.value / self.baseline
        return ratio if self.higher_is_better else 1 / ratio

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "load": list(self.load), "ratio": self.ratio}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Figure:
        known = {k: v for k, v in obj.items() if k in cls.__dataclass_fields__}
        known["load"] = tuple(known.get("load") or (0.0, 0.0, 0.0))
        return cls(**known)


def record(figure: Figure) -> None:
    """Append ``figure`` to the run's figures file (``$BENCH_FIGURES``), if there is one."""
    path = os.environ.get(ENV)
    if not path:
        return
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(figure.to_json()) + "\n")


def read(path: Path) -> list[Figure]:
    """The figures of a figures file (a line that is not a figure is skipped)."""
    if not path.exists():
        return []
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            found.append(Figure.from_json(json.loads(line)))
        except (ValueError, TypeError):
            continue
    return found


def cpu_seconds() -> float:
    """CPU time of this process and its waited-for children (user + system), seconds."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
