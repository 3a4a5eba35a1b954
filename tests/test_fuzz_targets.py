"""Issue 19 §6: the fuzz targets of `fuzz_targets.py`, a bounded run in CI (about a minute
in all); `python -m bench.campaign` runs their mutators over every entry point for a million inputs."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.fuzz_targets import check_ftdc, check_log, ftdc_seeds, log_seeds, mutated_ftdc
from bench.mutators import mutate_log

EXAMPLES = int(os.environ.get("FTDC_FUZZ_EXAMPLES", "25"))
BOUNDED = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def ftdc_inputs(ftdc_samples):
    return ftdc_seeds(ftdc_samples)


@pytest.fixture(scope="module")
def log_inputs(log_samples):
    return log_seeds(log_samples)


@BOUNDED
@given(data=st.data())
def test_damaged_ftdc_keeps_the_catalog_the_reader_and_the_outputs_in_step(ftdc_inputs, tmp_path_factory, data):
    seed = ftdc_inputs[data.draw(st.sampled_from(sorted(ftdc_inputs)))]
    path = tmp_path_factory.mktemp("fuzz") / "metrics.2024-05-14T09-00-00Z-00000"
    path.write_bytes(mutated_ftdc(seed, data.draw(st.randoms(use_true_random=False))))
    check_ftdc(path)


@BOUNDED
@given(data=st.data())
def test_damaged_log_lines_are_rows_or_problems_and_every_view_renders(log_inputs, tmp_path_factory, data):
    lines = log_inputs[data.draw(st.sampled_from(sorted(log_inputs)))]
    path = tmp_path_factory.mktemp("fuzz") / "mongod.log"
    path.write_bytes(mutate_log(lines, data.draw(st.randoms(use_true_random=False))))
    check_log(path)
