"""`analyze` reads the files once (issue 22): the catalog comes out of the pass that decodes
the values, so each chunk is inflated once, and that catalog says what `read_catalog` says."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

import analysis
import ftdc
from analysis.series.metrics import ALIASES, SERVICE_PREFIXES, candidates, resolve
from ftdc import _native
from ftdc.paths import resolve as resolve_paths
from ftdc.reader import read_with_catalog

T0_7 = 1713267282000  # the 7.0 sample's first sample, in ms


@pytest.fixture(scope="module")
def directory(ftdc_samples):
    return ftdc_samples / "mongod-7.0" / "diagnostic.data"


def inflated_by(action) -> int:
    before = _native.counters()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ftdc.FTDCWarning)
        action()
    return _native.counters()[0] - before


@pytest.mark.parametrize("window", [{}, {"start": T0_7 + 3_600_000, "end": T0_7 + 7_200_000}])
def test_analyze_inflates_each_chunk_once(directory, window):
    chunks = ftdc.read_catalog(directory).chunks.height
    assert chunks > 100
    # A time range decodes the chunks inside it and peeks the others: still one inflation each.
    assert inflated_by(lambda: analysis.analyze(directory, **window)) == chunks


@pytest.mark.parametrize("window", [{}, {"start": T0_7 + 3_600_000, "end": T0_7 + 7_200_000}])
def test_analyze_and_explore_inflate_each_chunk_once(directory, window):
    # The analysis keeps every metric's deltas for the explorer (as `explore` the command asks): the explorer's
    # reduction of the node's 2,000 metrics reads no file again.
    from analysis.outputs.report import explore

    chunks = ftdc.read_catalog(directory).chunks.height
    both = lambda: explore(analysis.analyze(directory, keep_metrics=True, **window), directory, "node", **window)  # noqa: E731
    assert inflated_by(both) == chunks


@pytest.mark.parametrize("window", [{}, {"start": T0_7 + 3_600_000, "end": T0_7 + 7_200_000}])
def test_the_catalog_of_a_read_is_the_catalog(directory, window):
    files = resolve_paths(directory)
    alone = ftdc.read_catalog(directory)
    catalog, frame, _ = read_with_catalog(files, candidates(), **window)
    assert catalog.documents.equals(alone.documents) and catalog.chunks.equals(alone.chunks)
    assert catalog.layouts == alone.layouts and catalog.schema() == alone.schema()
    assert frame.equals(ftdc.read_ftdc(directory, list(frame.columns[1:]), **window))


def test_frames_are_flagged_sorted_and_are(directory):
    start = ftdc.read_ftdc(directory, "serverStatus.uptime")["start"]
    assert start.flags["SORTED_ASC"]
    assert (start.dt.epoch("ms").diff().drop_nulls() >= 0).all()


def test_the_candidates_cover_what_resolve_takes_on_real_nodes(ftdc_samples):
    for directory in [ftdc_samples / "mongod-7.0" / "diagnostic.data", ftdc_samples / "mongod-4.2.1" / "diagnostic.data"]:
        names = list(ftdc.read_catalog(directory).schema())
        assert set(resolve(names).wanted) <= set(_native.select_names(candidates(), names))


_component = st.text(st.sampled_from("abcxyz019_-[]?*"), min_size=1, max_size=6).filter(lambda s: "." not in s)
_paths = [path for alias in ALIASES for path in alias.paths]


@given(
    st.lists(st.tuples(st.sampled_from(SERVICE_PREFIXES), st.sampled_from(_paths), _component), min_size=1, max_size=30),
    st.lists(st.text(min_size=1, max_size=20), max_size=10),
)
def test_the_candidates_cover_any_names_resolve_takes(chosen, noise):
    """Whatever a node holds, a read of the candidates decodes every path `resolve` picks."""
    names = [prefix + path.replace("{key}", key) for prefix, path, key in chosen] + noise
    assert set(resolve(names).wanted) <= set(_native.select_names(candidates(), names))
