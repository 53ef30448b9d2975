"""docs/benchmarks.md as `make bench` writes it (bench/benchmarks_page.py), over outputs shaped
as the benchmarks print them: no benchmark runs here."""

from __future__ import annotations

import pytest
from bench.benchmarks_page import (
    BEGIN,
    END,
    BenchOutput,
    Run,
    figure_lines,
    previous_rows,
    ratio_lines,
    render,
    rows,
    target_lines,
)

SUBMIT = """\
database orbit_b_1 on 127.0.0.1:3306: innodb_flush_log_at_trx_commit=1
n=20000 concurrency=16 server workers=1 cpus=2 load average at start 1.20 1.10 0.90
  baseline: 5000/20000 (2400/s)
baseline  2400.0 submits/s p50 5.1 ms p99 12.0 ms
orbit     1500.0 submits/s p50 9.0 ms p99 30.0 ms
ratio     orbit/baseline throughput 0.62  p99 2.50x
target    >= 1000 submits/s and p99 < 50 ms: met
load average at end 1.50 1.20 0.95
"""
VOICE = """\
whole: turns=8 reply p50=1500 ms p95=1700 ms (from the end-of-utterance decision: p50=900 ms)
    median ms since the end of speech: eou=600, first_token=900
p50 before/after: 1500 -> 480 ms (3.12x)
target p50 < 700 ms: PASS (best 480 ms)
"""


def run(date: str, *outputs: BenchOutput, command: str = "make bench") -> Run:
    return Run(date, 2, (1.2, 1.1, 0.9), command, outputs)


@pytest.mark.parametrize(
    ("line", "ratio", "target"),
    [
        ("ratio     orbit/baseline throughput 0.62  p99 2.50x", True, False),
        ("ratio D/baseline         0.78", True, False),
        ("cpu per call ratio load/baseline: 1.05", True, False),
        (
            "orbit_submit throughput: without console 900.00, with console 880.00, ratio 0.978",
            True,
            False,
        ),
        ("with/without console     0.962 (target: within 10 %)", True, False),
        ("p50 before/after: 1500 -> 480 ms (3.12x)", True, False),
        ("target (>=1000/s, ratio>=0.5): met", False, True),
        (
            "target    >= 1000 tasks/s and idle dispatch p50 < 5 ms (single submits): met",
            False,
            True,
        ),
        ("orbit     1500.0 submits/s p50 9.0 ms p99 30.0 ms", False, False),
        ("  baseline: 5000/20000 (2400/s)", False, False),
    ],
)
def test_a_line_is_a_ratio_a_target_or_a_figure(line: str, ratio: bool, target: bool) -> None:
    assert ratio_lines(line) == ([line.strip()] if ratio else [])
    assert target_lines(line) == ([line.strip()] if target else [])


def test_the_figures_are_the_lines_at_the_margin() -> None:
    lines = figure_lines(SUBMIT)
    assert "  baseline: 5000/20000 (2400/s)" not in lines
    assert lines[0].startswith("database orbit_b_1") and lines[-1].startswith("load average at end")
    assert len(figure_lines("x\n" * 100)) == 40


def test_a_row_names_the_date_machine_ratio_target_and_command() -> None:
    (row,) = rows(run("2026-12-02 16:00", BenchOutput("orbit_submit", 0, 61.4, SUBMIT)))
    assert row == (
        "| 2026-12-02 16:00 | 2 | 1.20 1.10 0.90 | orbit_submit | 0 | 61 "
        "| ratio orbit/baseline throughput 0.62 p99 2.50x "
        "| target >= 1000 submits/s and p99 < 50 ms: met | `make bench` |"
    )


def test_a_cell_without_a_ratio_or_with_a_pipe_keeps_the_table_whole() -> None:
    (row,) = rows(run("d", BenchOutput("idle_floor", 1, 2.0, "floor | p50 1.0 ms\n")))
    assert "| — | — |" in row
    assert rows(run("d", BenchOutput("x", 0, 1, "ratio a|b 1.0\n")))[0].count("\\|") == 1


def test_each_run_adds_its_rows_above_the_earlier_ones() -> None:
    first = render(run("2026-12-01 10:00", BenchOutput("orbit_submit", 0, 60, SUBMIT)))
    second = render(
        run("2026-12-02 11:00", BenchOutput("voice_latency", 0, 30, VOICE), command="x"),
        first,
    )
    table = previous_rows(second)
    assert [row.split(" | ")[3] for row in table] == ["voice_latency", "orbit_submit"]
    assert table[1] == previous_rows(first)[0]
    assert second.count(BEGIN) == 1 and second.count(END) == 1
    assert "## Figures of the latest run, 2026-12-02 11:00 UTC" in second
    assert "p50 before/after: 1500 -> 480 ms (3.12x)" in second
    assert "orbit     1500.0 submits/s" not in second  # only the latest run's figures


def test_a_failed_benchmark_is_marked_and_a_page_without_markers_has_no_rows() -> None:
    page = render(run("d", BenchOutput("orbit_workers", 2, 5, "")))
    assert "### orbit_workers (failed: exit code 2)" in page and "(no output)" in page
    assert previous_rows("# Benchmarks\n| a | b |\n") == []
    assert previous_rows(f"{BEGIN}\n| a |\n") == []
