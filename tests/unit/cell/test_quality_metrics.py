"""Each call-quality figure of an answered call becomes one observation of its histogram,
in base units (seconds, ratio), named by the Prometheus conventions."""

from __future__ import annotations

import pytest

from agentcall.cell.telemetry.metrics import CellMetrics
from tests.support import metric_names

pytestmark = pytest.mark.unit

QUALITY = {
    "rtp": {"loss_ratio": 0.02, "jitter_ms": 12.0, "late_packets": 3, "concealed": 4},
    "clock": {"stalls": 2, "max_lag_ms": 80.0},
}


@pytest.mark.parametrize(
    ("family", "observed"),
    [
        ("cell_call_rtp_loss_ratio", 0.02),
        ("cell_call_rtp_jitter_seconds", 0.012),
        ("cell_call_rtp_late_packets", 3.0),
        ("cell_call_rtp_concealed_packets", 4.0),
        ("cell_call_media_clock_stalls", 2.0),
        ("cell_call_media_clock_max_lag_seconds", 0.08),
    ],
)
def test_each_quality_figure_is_one_observation_per_call(family: str, observed: float) -> None:
    metrics = CellMetrics()
    metrics.observe_quality(QUALITY)
    metrics.observe_quality(None)  # an unanswered call: nothing to observe
    found = {f.name: f for f in metric_names.families(metrics.render().decode())}
    samples = {s.name: s.value for s in found[family].samples if not s.labels}
    assert found[family].type == "histogram"
    assert samples[f"{family}_count"] == 1.0
    assert samples[f"{family}_sum"] == pytest.approx(observed)


def test_every_cell_metric_follows_the_naming_rules() -> None:
    metrics = CellMetrics()
    metrics.observe_quality(QUALITY)
    assert metric_names.violations(metrics.render().decode(), ("cell_",)) == []
