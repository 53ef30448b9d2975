"""Test support shared by every tier: service locations, free ports and waiting, one TCP proxy,
real-process harnesses, data builders and the fakes behind the ports the product defines.

The tiers (`tests/unit`, `tests/integration`, `tests/acceptance`) import from here and from the
product, never from one another (checked by `tests/unit/test_test_tiers.py`).
"""
