"""Shared fixtures: the real samples live in ../shared/samples beside the checkout."""

import os
from pathlib import Path

import pytest

SHARED_SAMPLES = Path(__file__).resolve().parents[1].parent / "shared" / "samples"


def require_samples(*parts: str) -> Path:
    """Path under ../shared/samples; skip locally when absent, fail under CI=true."""
    path = SHARED_SAMPLES.joinpath(*parts)
    if not path.exists():
        message = f"sample data missing: {path}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def ftdc_samples() -> Path:
    return require_samples("ftdc")


@pytest.fixture(scope="session")
def log_samples() -> Path:
    return require_samples("logs")
