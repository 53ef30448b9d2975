"""mocksaas's SIP whitelist (D-NOTE-6): an empty list allows nobody, so the default
approves the callees the mock generates; an explicit list, even empty, is kept."""

from __future__ import annotations

from typing import Any

import pytest

from agentcall.mocksaas.domain.commands import generated_callees
from agentcall.mocksaas.domain.sip import DEFAULT_TARGETS, SipOptions
from agentcall.mocksaas.ops.dispatchers import sip_options


def test_the_default_whitelist_holds_the_generated_callees_d_note_6() -> None:
    targets = set(SipOptions().allowed_targets)
    assert set(generated_callees(DEFAULT_TARGETS)) == targets
    assert {"15000000000", "15000000001", "15000000999"} <= targets
    assert "15000001000" not in targets


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({}, SipOptions().allowed_targets),
        ({"allowed_targets": None}, SipOptions().allowed_targets),
        ({"allowed_targets": []}, ()),  # nobody may be called
        ({"allowed_targets": ["15003164745"]}, ("15003164745",)),
    ],
)
def test_sip_builder_keeps_an_explicit_whitelist_d_note_6(
    body: dict[str, Any], expected: tuple[str, ...]
) -> None:
    assert sip_options(body).allowed_targets == expected
