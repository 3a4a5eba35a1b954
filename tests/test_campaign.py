"""The fuzz campaign's harness (`bench/campaign.py`): every outcome counted once, a defect's
input kept and reproduced from its number, a hang and a crash caught by the watchdog, and a
run resumed where it stopped. The campaign's own figures are in docs/hardening.md."""

from __future__ import annotations

import json
import os
import random
import struct
import time
import zlib
from collections import Counter

import bson
import pytest

from bench import campaign
from bench.campaign import Entry, Inputs
from bench.mutators import mutate_ftdc, mutate_log, split_ftdc


def test_the_plan_gives_each_target_a_million_inputs_over_every_entry_point():
    for target in ("ftdc", "logs"):
        entries = [e for e in campaign.PLAN if e.target == target]
        assert sum(e.inputs for e in entries) >= 1_000_000, target
        assert {"read", "analyze", "report", "explore", "fleet"} <= {e.name for e in entries}


def _runner(name, path, out, rng):
    if name == "boom":
        raise ValueError("what the code under test raised")
    if name == "stuck":
        time.sleep(60)
    if name == "dies":
        os._exit(3)
    return "warnings" if rng.random() < 0.5 else "ok"


@pytest.fixture
def fake_plan(monkeypatch, ftdc_samples, log_samples):
    entries = {
        "ftdc/fine": Entry("ftdc", "fine", 5, 20, 2),
        "ftdc/boom": Entry("ftdc", "boom", 3, 20, 2),
        "ftdc/stuck": Entry("ftdc", "stuck", 1, 1, 1),
        "ftdc/dies": Entry("ftdc", "dies", 2, 20, 1),
    }
    monkeypatch.setattr(campaign, "ENTRIES", entries)
    monkeypatch.setitem(campaign.RUNNERS, "ftdc", _runner)
    return entries


def test_every_outcome_is_counted_once_and_each_defect_keeps_its_input(fake_plan, tmp_path):
    result = campaign.campaign(list(fake_plan), 1.0, 1, 8 << 30, tmp_path / "findings")
    entries = result["entries"]
    assert [entries[k]["inputs"] for k in fake_plan] == [5, 3, 1, 2]
    assert entries["ftdc/fine"]["ok"] + entries["ftdc/fine"]["warnings"] == 5
    assert entries["ftdc/boom"]["defect"] == 3
    assert entries["ftdc/stuck"]["hang"] == 1
    assert entries["ftdc/dies"]["crash"] == 2
    # One saved input per distinct defect, named by its number, a real FTDC file in it.
    (boom,) = entries["ftdc/boom"]["defects"].items()
    assert boom[0].startswith("ValueError: what the code under test raised")
    saved = list((tmp_path / "findings").glob("ftdc-boom-*/diagnostic.data/*"))
    assert len(saved) == 1 and saved[0].stat().st_size > 0
    assert list(entries["ftdc/stuck"]["defects"]) == ["hang: over 1 s"]
    assert list(entries["ftdc/dies"]["defects"]) == ["crash: exit code 3"]
    assert "| **ftdc** | **all** | **11** |" in campaign.table(result)


def test_a_resumed_run_skips_what_ran_and_adds_to_its_counts(fake_plan, tmp_path):
    """As `--resume` reads it back from `--out`: one block of two inputs ran before."""
    counts = {
        "inputs": 2,
        "ok": 2,
        "warnings": 0,
        "documented error": 0,
        "defect": 0,
        "crash": 0,
        "hang": 0,
        "memory": 0,
        "defects": {},
    }
    earlier = json.loads(
        json.dumps({"seconds": 1, "scale": 1.0, "entries": {"ftdc/fine": counts}, "blocks": [("ftdc/fine", 0, 2)]})
    )
    resumed = campaign.campaign(["ftdc/fine"], 1.0, 1, 8 << 30, tmp_path, earlier=earlier)
    assert resumed["entries"]["ftdc/fine"]["inputs"] == 5
    assert sorted(resumed["blocks"]) == [("ftdc/fine", 0, 2), ("ftdc/fine", 2, 4), ("ftdc/fine", 4, 5)]


def test_an_input_is_made_again_from_its_number(ftdc_samples, log_samples, tmp_path):
    inputs = Inputs()

    def made(entry: Entry, number: int, place) -> bytes:
        path = inputs.make(entry, number, tmp_path / place)
        return b"".join(p.read_bytes() for p in sorted(path.iterdir())) if path.is_dir() else path.read_bytes()

    for entry in (Entry("ftdc", "read", 1, 1, 1), Entry("logs", "read", 1, 1, 1)):
        assert made(entry, 7, "a") == made(entry, 7, "b") != made(entry, 8, "c")


def _layers(data: bytes, reference: bytes, counts: bytes, deltas: bytes) -> set[str]:
    """Which layers of the seed's one chunk an edited file changed, as far as it still parses."""
    try:
        chunks = [d for d in split_ftdc(data) if d.inflated is not None]
    except (zlib.error, ValueError, bson.errors.BSONError):
        return {"compression or envelope"}
    if not chunks:
        return {"compression or envelope"}
    inflated = chunks[0].inflated or b""
    size = struct.unpack_from("<i", inflated)[0] if len(inflated) >= 4 else 0
    parts = {"reference": inflated[:size], "counts": inflated[size : size + 8], "deltas": inflated[size + 8 :]}
    return {name for name, part in parts.items() if part != {"reference": reference, "counts": counts, "deltas": deltas}[name]}


def test_the_mutators_reach_every_layer_of_a_chunk(ftdc_samples):
    """Edits of one real chunk change its reference document, its counts and its varints, and
    some break the envelope or the compression."""
    (document,) = split_ftdc((ftdc_samples / "mongod-7.0" / "diagnostic.data" / "metrics.interim").read_bytes())
    inflated = document.inflated or b""
    size = struct.unpack_from("<i", inflated)[0]
    seed = (inflated[:size], inflated[size : size + 8], inflated[size + 8 :])
    rng = random.Random(0)
    reached = Counter(layer for _ in range(200) for layer in _layers(mutate_ftdc([document], rng), *seed))
    assert set(reached) == {"reference", "counts", "deltas", "compression or envelope"}, reached


def test_a_damaged_log_keeps_lines_of_its_seed(log_samples):
    lines = (log_samples / "legacy-text" / "mongod_4.2.11.log").read_bytes().splitlines()
    damaged = mutate_log(lines, random.Random(3))
    assert damaged.endswith(b"\n") and any(line in lines for line in damaged.split(b"\n"))
