"""The cell carries the approved snapshot (D-NOTE-9, D-CFG-1): the digest both sides
compute, the comparison, and the gate it closes."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agentcall.cell.state.approved import ApprovedConfig
from agentcall.cell.state.approved import applied_config_digest as cell_digest
from agentcall.dispatcher.discovery.cellgate import NAME, CellGate
from agentcall.dispatcher.discovery.gate import Gate
from agentcall.dispatcher.domain.identity import CellIdentity, identity_problem
from agentcall.dispatcher.domain.model import SipSnapshot
from agentcall.dispatcher.saas.parse import applied_config_digest, parse_sip
from agentcall.mocksaas.domain.sip import SipOptions, build_sip_snapshot
from tests.support.dispatcher_factories import D_ID
from tests.support.dispatcher_factories import sip as sip_snapshot

NOW = datetime(2026, 3, 2, tzinfo=UTC)


def snapshot(**options: Any) -> dict[str, Any]:
    return build_sip_snapshot(D_ID, 1, SipOptions(**options), NOW)


def test_the_cell_and_the_d_compute_the_same_digest_d_note_9(tmp_path: Path) -> None:
    body = snapshot()
    approved = ApprovedConfig(tmp_path)
    assert approved.load(body) == cell_digest(body) == applied_config_digest(body)
    parsed = parse_sip(json.dumps(body).encode(), D_ID)
    assert parsed.config_sha256 == cell_digest(body) and parsed.cell_id == "cell-mock"
    again = ApprovedConfig(tmp_path)  # a restarted cell carries it still
    again.recover()
    assert again.digest == approved.digest


@pytest.mark.parametrize(
    "change",
    [
        {"max_concurrent_calls": 7},  # trunk details
        {"caller_id": "BD99"},
        {"trunk_id": "trunk-other"},
        {"time_zone": "Europe/Paris"},  # a trunk schedule
    ],
)
def test_any_change_of_the_applied_configuration_changes_the_digest_d_note_9(
    change: dict[str, Any],
) -> None:
    assert applied_config_digest(snapshot(**change)) != applied_config_digest(snapshot())


def test_the_revision_and_approval_do_not_change_what_the_cell_applies() -> None:
    first, second = snapshot(), build_sip_snapshot(D_ID, 2, SipOptions(), NOW)
    assert applied_config_digest(first) == applied_config_digest(second)


EXPECTED = ("cell-a", "a" * 64)


@pytest.mark.parametrize(
    ("reported", "problem"),
    [
        (CellIdentity("cell-a", "a" * 64), None),
        (CellIdentity("cell-b", "a" * 64), "cell_id"),
        (CellIdentity(None, "a" * 64), "cell_id"),
        (CellIdentity("cell-a", "b" * 64), "configuration"),
        (CellIdentity("cell-a", None), "configuration none"),
        (CellIdentity(None, None), "cell_id"),
    ],
)
def test_identity_problem_table_d_note_9(reported: CellIdentity, problem: str | None) -> None:
    found = identity_problem(*EXPECTED, reported)
    assert found is None if problem is None else (found is not None and problem in found)


class Sequence:
    def __init__(self, *items: Any) -> None:
        self.items = list(items)

    async def __call__(self) -> Any:
        return self.items.pop(0) if len(self.items) > 1 else self.items[0]


async def test_the_gate_opens_only_on_a_match_and_closes_again_visibly_d_note_9() -> None:
    gate = Gate()
    gate.lift("discovery", NOW)
    sip: SipSnapshot = replace(sip_snapshot(), cell_id="cell-a", config_sha256="a" * 64)
    identities = Sequence(
        None,  # the cell cannot be asked yet: stays closed
        CellIdentity("cell-b", "a" * 64),
        CellIdentity("cell-a", "a" * 64),
        None,  # unreachable again: the last verdict stands
        CellIdentity("cell-a", "c" * 64),
    )
    cell_gate = CellGate(
        gate, sip=Sequence(sip), identity=identities, interval_s=1, clock=lambda: NOW
    )
    verdicts = []
    for _ in range(5):
        await cell_gate.check()
        verdicts.append((gate.open, gate.reasons.get(NAME, "")))
    assert [open_ for open_, _ in verdicts] == [False, False, True, True, False]
    assert "cell_id" in verdicts[1][1] and "configuration" in verdicts[4][1]
    status = cell_gate.status()
    assert not status.verified and status.mismatches == 2
    assert (status.expected_cell_id, status.reported_config_sha256) == ("cell-a", "c" * 64)
