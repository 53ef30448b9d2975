"""Settings shared by the fuzzing tests (marker `fuzz`).

Every property-based or schema-driven fuzzing test decorates itself with `FUZZ` so that one
variable sets its number of generated cases: a short profile in `make test` (the default,
200) and >= 10,000 per target in `make fuzz` (FUZZ_EXAMPLES=10000).

    @pytest.mark.fuzz
    @FUZZ
    @given(body=...)
    def test_...(body): ...
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "200"))

FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,  # no timing flakes on a busy machine
    suppress_health_check=list(HealthCheck),
    database=None,  # runs are reproducible from the printed seed, not from a local cache
)
