"""The README's test command on a fresh clone: no hypothesis cache, CI unset, as a new user runs it."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_text_strategies_pass_with_a_cold_hypothesis_cache(tmp_path):
    """Hypothesis builds its Unicode tables on first use; that must not fail the first test drawing text."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["HYPOTHESIS_STORAGE_DIRECTORY"] = str(tmp_path / "hypothesis")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_logs_robustness.py::test_shape_stable_under_value_changes",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:]
    assert (tmp_path / "hypothesis").is_dir()  # the cache was cold: this run built it


def test_hypothesis_draws_the_same_way_with_and_without_ci():
    """One profile serves both: CI=true once alone loaded a derandomized profile that hid a test failing on other seeds."""
    code = "import conftest, hypothesis; s = hypothesis.settings.default; print(s.derandomize, s.print_blob, s.deadline, s.suppress_health_check, s.max_examples)"
    profiles = []
    for ci in ("true", None):
        env = {k: v for k, v in os.environ.items() if k != "CI"}
        if ci:
            env["CI"] = ci
        result = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT / "tests", env=env, capture_output=True, text=True, timeout=120, check=True
        )
        profiles.append(result.stdout)
    assert profiles[0] == profiles[1] and profiles[0].startswith("True True None")
