"""Fixtures for the hardening tests: unique virtual bus names, an isolated environment."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated(no_can_env: None) -> None:
    """Every test here runs without a developer's CAN settings (tests/conftest.py)."""
