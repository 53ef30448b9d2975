"""Each Prometheus naming rule of tests/support/metric_names.py on a small exposition: one that
keeps it and one that breaks it (the real /metrics of the D and the cell are checked in
tests/acceptance/dispatcher/test_readiness_and_metrics.py)."""

from __future__ import annotations

import pytest

from tests.support import metric_names as m

pytestmark = pytest.mark.unit

PREFIXES = ("dispatcher_", "cell_")
HISTOGRAM = """# HELP dispatcher_x_seconds x
# TYPE dispatcher_x_seconds histogram
dispatcher_x_seconds_bucket{le="0.1"} 1.0
dispatcher_x_seconds_bucket{le="+Inf"} 2.0
dispatcher_x_seconds_count 2.0
dispatcher_x_seconds_sum 0.3
"""


def one(text: str, rule: str) -> list[str]:
    return [v for v in m.violations(text, PREFIXES) if v.split(": ")[1] == rule]


@pytest.mark.parametrize(
    ("rule", "good", "bad"),
    [
        (
            "snake_case",
            '# HELP cell_a_b a\n# TYPE cell_a_b gauge\ncell_a_b{call_state="x"} 1\n',
            '# HELP cell_aB a\n# TYPE cell_aB gauge\ncell_aB{State="x"} 1\n',
        ),
        (
            "prefix",
            "# HELP cell_up a\n# TYPE cell_up gauge\ncell_up 1\n",
            "# HELP up a\n# TYPE up gauge\nup 1\n",
        ),
        (
            "counter_total",
            "# HELP cell_calls a\n# TYPE cell_calls counter\ncell_calls_total 1\n",
            "# HELP cell_calls a\n# TYPE cell_calls counter\ncell_calls 1\n",
        ),
        (
            "gauge_not_total",
            "# HELP cell_calls a\n# TYPE cell_calls gauge\ncell_calls 1\n",
            "# HELP cell_calls_total a\n# TYPE cell_calls_total gauge\ncell_calls_total 1\n",
        ),
        (
            "base_units",
            "# HELP cell_lag_seconds a\n# TYPE cell_lag_seconds gauge\ncell_lag_seconds 1\n",
            "# HELP cell_lag_ms a\n# TYPE cell_lag_ms gauge\ncell_lag_ms 1\n",
        ),
        (
            "histogram_series",
            HISTOGRAM,
            HISTOGRAM.replace('dispatcher_x_seconds_bucket{le="+Inf"} 2.0\n', ""),
        ),
        (
            "help_text",
            "# HELP cell_up a\n# TYPE cell_up gauge\ncell_up 1\n",
            "# TYPE cell_up gauge\ncell_up 1\n",
        ),
    ],
)
def test_each_rule_keeps_the_good_and_names_the_bad(rule: str, good: str, bad: str) -> None:
    assert one(good, rule) == []
    assert len(one(bad, rule)) == 1, m.violations(bad, PREFIXES)


def test_every_rule_has_a_row() -> None:
    assert {name for name, _ in m.RULES} == {
        "snake_case",
        "prefix",
        "counter_total",
        "gauge_not_total",
        "base_units",
        "histogram_series",
        "help_text",
    }


def test_a_family_declared_twice_is_named() -> None:
    text = "# HELP cell_up a\n# TYPE cell_up gauge\ncell_up 1\n"
    assert m.violations(text + text, PREFIXES) == ["cell_up: unique: declared 2 times"]


def test_histogram_without_sum_is_named() -> None:
    text = HISTOGRAM.replace("dispatcher_x_seconds_sum 0.3\n", "")
    assert one(text, "histogram_series") == [
        "dispatcher_x_seconds: histogram_series: histogram without dispatcher_x_seconds_sum"
    ]
