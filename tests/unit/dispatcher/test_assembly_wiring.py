"""The Dispatcher's assembly (`service.py`) hands every component its hooks through its
constructor (`on_outbox=`, `on_accepted=`, `on_tasks=`, ...): nothing is set on a component
after it is built. (The self-check of `tests.unit.wiring` is in the Orbit assembly test.)"""

from __future__ import annotations

import pytest

from tests.unit import layers, wiring

SERVICE = layers.SRC / "agentcall" / "dispatcher" / "service.py"
ASSEMBLY = ("Dispatcher.__init__", "Dispatcher._features", "Dispatcher._gates")

pytestmark = pytest.mark.unit


def test_the_assembly_passes_hooks_to_constructors() -> None:
    assert wiring.late_hooks(SERVICE, ASSEMBLY) == []
