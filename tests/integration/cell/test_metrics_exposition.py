"""The cell's `/metrics` after a real call passes Prometheus's own `promtool check metrics`
(naming, types, units), as the Dispatcher's and Orbit's do in their suites."""

from __future__ import annotations

import httpx

from agentcall.cell.client import CellClient
from tests.support import promtool

from .harness import CellProcess
from .helpers import Watch, plan, unique


async def test_the_cells_metrics_pass_promtool(cell: CellClient, cell_process: CellProcess) -> None:
    watch = await Watch.open(cell)
    call = await cell.originate(plan(unique("metrics")))
    await watch.settled(call.call_id)
    await watch.aclose()
    async with httpx.AsyncClient(base_url=cell_process.url) as http:
        text = (await http.get("/metrics")).text
    assert "cell_calls_ended_total" in text
    checked = promtool.check_metrics(text)
    assert checked.returncode == 0, checked.stdout + checked.stderr
