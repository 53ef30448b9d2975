"""var/bench/results.{md,json} as `make bench` writes them and docs/benchmarks.md written from
them (bench/benchmarks_page.py), over outputs and figures shaped as the benchmarks give them:
no benchmark runs here; the repository's page is checked as it stands."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from bench.benchmarks_page import (
    BENCHMARKS_HEADER,
    FIGURES_HEADER,
    BenchOutput,
    Run,
    benchmark_row,
    figure_lines,
    figure_row,
    page,
    problems,
    ratio_lines,
    results_json,
    results_md,
    run_from_json,
    target_lines,
)
from bench.figures import Figure

PAGE = Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md"

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
    return Run(date, 2, (1.2, 1.1, 0.9), command, outputs, FIGURES)


DRAIN = Figure(
    "anchors",
    "drain Orbit/Celery",
    2866.0,
    "tasks/s",
    baseline=2999.0,
    baseline_name="Celery prefork -c 2",
    cpu_ms_per_unit=0.71,
    per="task",
    target=">= 1.1x Celery",
    met=False,
    load=(0.5, 0.4, 0.3),
)
GREETING = Figure(
    "voice_latency", "greeting p50", 120.0, "ms", False, target="p50 < 300 ms", met=True
)
FIGURES = (DRAIN, GREETING)


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


def test_a_figure_row_names_value_baseline_ratio_cpu_target_and_load() -> None:
    assert figure_row(DRAIN) == (
        "| anchors | drain Orbit/Celery | 2,866 tasks/s | 2,999 tasks/s (Celery prefork -c 2) "
        "| 0.96× | 0.71 ms per task | >= 1.1x Celery: not met | 0.50 0.40 0.30 |"
    )
    row = figure_row(Figure("v", "reply p50", 480.0, "ms", False, baseline=1500.0, load=(1, 1, 1)))
    assert "| 3.12× |" in row  # lower is better: the ratio is baseline/value


def test_a_benchmark_row_names_exit_time_load_ratio_and_target() -> None:
    out = BenchOutput("orbit_submit", 0, 61.4, SUBMIT, (1.5, 1.0, 0.5))
    assert benchmark_row(out) == (
        "| orbit_submit | 0 | 61 | 1.50 1.00 0.50 "
        "| ratio orbit/baseline throughput 0.62 p99 2.50x "
        "| target >= 1000 submits/s and p99 < 50 ms: met |"
    )


def test_a_cell_without_a_ratio_or_with_a_pipe_keeps_the_table_whole() -> None:
    assert "| — | — |" in benchmark_row(BenchOutput("idle_floor", 1, 2.0, "floor | p50 1.0 ms\n"))
    assert benchmark_row(BenchOutput("x", 0, 1, "ratio a|b 1.0\n")).count("\\|") == 1
    text = results_md(run("2026-12-02 16:00", BenchOutput("x", 0, 1, "ratio a|b 1.0\n")))
    assert problems(text) == []


def test_the_results_name_the_run_every_figure_and_every_benchmark() -> None:
    the_run = run(
        "2026-12-02 16:00",
        BenchOutput("orbit_submit", 0, 61, SUBMIT, (1.2, 1.1, 0.9)),
        BenchOutput("orbit_workers", 2, 5, ""),
    )
    text = results_md(the_run)
    assert "Run 2026-12-02 16:00 UTC with `make bench` on 2 cores, " in text
    assert "load average at the start 1.20 1.10 0.90" in text
    assert figure_row(DRAIN) in text and figure_row(GREETING) in text
    assert "### orbit_workers (failed: exit code 2)" in text and "(no output)" in text
    assert problems(text) == []


def test_the_json_results_give_back_the_same_run() -> None:
    the_run = run("2026-12-02 16:00", BenchOutput("voice_latency", 0, 30, VOICE, (1.0, 0.5, 0.2)))
    obj = json.loads(json.dumps(results_json(the_run)))
    assert obj["figures"][0]["ratio"] == pytest.approx(2866 / 2999)
    assert obj["benchmarks"][0]["ratio_lines"] == ["p50 before/after: 1500 -> 480 ms (3.12x)"]
    assert results_md(run_from_json(obj)) == results_md(the_run)


def test_the_page_is_the_latest_run_under_how_to_reproduce_it() -> None:
    text = page(run("2026-12-02 16:00", BenchOutput("voice_latency", 0, 30, VOICE)))
    assert text.startswith("# Benchmarks\n")
    assert "benchmarks_page.py --write docs/benchmarks.md" in text
    assert "## The latest run" in text and "#### voice_latency" in text
    assert problems(text) == []


def test_an_ill_formed_page_is_named_so() -> None:
    good = page(run("2026-12-02 16:00", BenchOutput("x", 0, 1, "ratio 1.0\n")))
    assert problems(good.replace("Run 2026", "Ran 2026")) == [
        "no line naming the run's date, command and cores"
    ]
    short = good.replace(figure_row(GREETING), "| voice_latency | greeting |")
    assert problems(short) == ["a row of the wrong width: | voice_latency | greeting |"]
    assert problems(good.replace(BENCHMARKS_HEADER, "")) == [
        f"no table headed {BENCHMARKS_HEADER.splitlines()[0]}"
    ]
    assert problems(good + "```\n") == ["an unclosed code block"]


def test_the_repository_page_is_a_well_formed_run_with_its_command() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert problems(text) == []
    assert FIGURES_HEADER in text
    assert re.search(r"with `(make bench|make bench-anchors|bench/run_all\.py[^`]*)`", text)
