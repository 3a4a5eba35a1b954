"""`ftdc.decoding.decode_ahead`: a small node's decode started before the analyses load, its answer taken by the
reader that would otherwise decode (`read_with_catalog`), each chunk still inflated once."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import analysis
from analysis.series.metrics import candidates
from ftdc import _native, decoding
from ftdc.decoding import decode_ahead
from ftdc.frames import to_polars
from ftdc.paths import resolve
from ftdc.reader import read_with_catalog

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "samples" / "diagnostic.data"
T0_7 = 1713267282000  # the 7.0 sample's first sample, in ms


@pytest.fixture(scope="module")
def node(ftdc_samples):
    return ftdc_samples / "mongod-7.0" / "diagnostic.data"


def inflations(action):
    """What `action` returned, and how many chunks it inflated."""
    before = _native.counters()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = action()
    return value, _native.counters()[0] - before


@pytest.mark.parametrize("window", [(None, None), (T0_7 + 3_600_000, T0_7 + 7_200_000)], ids=["whole", "an hour"])
@pytest.mark.parametrize("keep", [False, True], ids=["read", "kept"])
def test_the_read_takes_the_decode_started_ahead_and_reads_what_it_would_have(node, window, keep):
    files = resolve(node)
    (catalog, frame, kept), alone = inflations(lambda: read_with_catalog(files, candidates(), *window, keep=keep))
    ahead, started = inflations(lambda: decode_ahead(node, candidates(), *window, keep=keep))
    assert ahead is not None
    _, finished = inflations(ahead.result)  # the decode's own thread, done
    (catalog_ahead, frame_ahead, kept_ahead), taken = inflations(
        lambda: read_with_catalog(files, candidates(), *window, keep=keep, started=ahead)
    )
    assert taken == 0  # the reader inflated nothing: it took the answer
    assert started + finished == alone > 0  # the decode ahead inflated each chunk the reader would have, once
    assert frame_ahead.equals(frame) and frame.height > 0
    assert catalog_ahead.schema() == catalog.schema()
    assert catalog_ahead.chunks.equals(catalog.chunks)
    assert (kept_ahead is None) == (kept is None) == (not keep)


@pytest.mark.parametrize(
    "other",
    [
        {"metrics": ["serverStatus.connections.current"]},
        {"start": T0_7 + 3_600_000},
        {"keep": True},
    ],
    ids=["other metrics", "another range", "every metric kept"],
)
def test_a_decode_started_for_another_read_is_not_taken(node, other):
    asked = {"metrics": list(candidates()), "start": None, "end": None, "keep": False}
    ahead = decode_ahead(node, asked["metrics"], asked["start"], asked["end"], keep=asked["keep"])
    assert ahead is not None
    ahead.result()  # done, so that what follows counts the reader's inflations alone
    wanted = asked | other
    files = resolve(node)
    (_, frame, _), inflated = inflations(
        lambda: read_with_catalog(files, wanted["metrics"], wanted["start"], wanted["end"], keep=wanted["keep"], started=ahead)
    )
    (_, expected, _), _ = inflations(
        lambda: read_with_catalog(files, wanted["metrics"], wanted["start"], wanted["end"], keep=wanted["keep"])
    )
    assert inflated > 0  # decoded anew, for what it asks
    assert frame.equals(expected)


def test_only_a_small_node_is_decoded_ahead(node, monkeypatch):
    size = sum(f.path.stat().st_size for f in resolve(node))
    monkeypatch.setattr(decoding, "AHEAD_BYTES", size)
    assert decode_ahead(node, candidates(), None, None, keep=False) is not None
    monkeypatch.setattr(decoding, "AHEAD_BYTES", size - 1)
    assert decode_ahead(node, candidates(), None, None, keep=False) is None


def test_a_node_the_reader_would_warn_of_or_refuse_is_left_to_it(tmp_path, monkeypatch):
    from ftdc import paths

    assert decode_ahead(tmp_path / "nowhere", None, None, None, keep=False) is None
    assert decode_ahead(tmp_path, None, None, None, keep=False) is None  # no metrics.* in it
    node = tmp_path / "diagnostic.data"
    node.mkdir()
    for f in resolve(DEMO):
        (node / f.path.name).write_bytes(f.path.read_bytes())
    largest = max(f.path.stat().st_size for f in resolve(DEMO))
    too_large = node / "metrics.2020-01-01T00-00-00Z-00000"
    too_large.write_bytes(b"\0" * (largest + 1))
    # That one file "larger than any mongod writes": warned of and left out, the demo's files read.
    monkeypatch.setattr(paths, "MAX_FILE_BYTES", largest)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        assert decode_ahead(node, None, None, None, keep=False) is None
    assert warned == []  # not started, and not warned of here: the reader warns when it resolves the node itself
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        assert [f.path.name for f in resolve(node)] == [f.path.name for f in resolve(DEMO)]
    assert [str(w.message).split(":")[0] for w in warned] == [str(too_large)]


def test_a_decode_that_fails_raises_where_its_answer_is_taken(monkeypatch):
    def out_of_memory(*args, **kwargs):
        raise MemoryError("the decoder's allocation failed")

    monkeypatch.setattr(_native, "read", out_of_memory)
    ahead = decode_ahead(DEMO, None, None, None, keep=False)
    assert ahead is not None
    with pytest.raises(MemoryError, match="allocation failed"):
        read_with_catalog(resolve(DEMO), started=ahead)


def test_one_decoder_thread_reads_what_the_shared_pool_reads(node):
    files = [str(f.path) for f in resolve(node)]
    interim = [f.interim for f in resolve(node)]
    shared = _native.read(files, interim, list(candidates()), catalog=True)
    alone = _native.read(files, interim, list(candidates()), catalog=True, threads=1)
    assert shared.documents == alone.documents
    assert to_polars(alone).equals(to_polars(shared))
    assert to_polars(shared).width > 100


# A run in a fresh process: whether it started a decode ahead, how many chunks it inflated, what it found.
RUN_PROBE = """
import json, sys, warnings
warnings.simplefilter("ignore")
import analysis
from analysis import entry
from ftdc import _native
started = []
real = entry.decode_ahead
entry.decode_ahead = lambda *a, **k: started.append(real(*a, **k)) or started[-1]
before = _native.counters()[0]
ran = analysis.run([sys.argv[1]], no_log=True)
inflated = _native.counters()[0] - before
node = ran.nodes[0]
print(json.dumps({
    "started": [s is not None for s in started],
    "inflated": inflated,
    "chunks": node.evidence.catalog.chunks.height,
    "findings": [f.statement for f in node.result.findings],
}))
"""


def test_a_run_decodes_a_small_node_once_ahead_and_finds_what_an_analysis_does(node):
    result = subprocess.run([sys.executable, "-c", RUN_PROBE, str(node)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.splitlines()[-1])
    assert seen["started"] == [True]
    assert seen["inflated"] == seen["chunks"] > 100  # each chunk once, on the decode's thread
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alone = analysis.analyze(node)
    assert seen["findings"] == [f.statement for f in alone.result.findings] != []


def test_with_the_stages_loaded_a_run_decodes_on_every_core_after_them(node, monkeypatch):
    """A run whose stages are imported already (as here: this process imported them) has nothing to overlap."""
    started = []
    monkeypatch.setattr("analysis.entry.decode_ahead", lambda *a, **k: started.append(True))
    import analysis.observe  # noqa: F401  (loaded, as `explore` loads it before its run)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ran = analysis.run([node], no_log=True)
    assert started == [] and ran.nodes[0].result.findings


def test_the_package_alone_loads_no_stage():
    """`import analysis` and what `run` imports before it starts a decode load neither polars nor the analyses."""
    probe = (
        "import json, sys, analysis, analysis.entry;"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('polars', 'pyarrow', 'numpy')"
        " or m in ('analysis.observe', 'analysis.nodes'))))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []
