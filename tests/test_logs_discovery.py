"""Which files a log read takes, in what order, and which decoder each line gets."""

import gzip
import os

import polars as pl
import pytest

import ftdc
from ftdc.logs import problems, sources


@pytest.fixture(scope="module")
def json_log(log_samples) -> bytes:
    return gzip.decompress((log_samples / "mongod-6.0.11" / "sample-mongod.log.gz").read_bytes())


@pytest.mark.parametrize("damage", ["junk first line", "cut start"])
def test_a_damaged_start_does_not_turn_json_into_text(tmp_path, json_log, damage):
    data = b"not a log line at all\n" + json_log if damage == "junk first line" else json_log[1000:]
    path = tmp_path / "mongod.log"
    path.write_bytes(data)
    frames = ftdc.read_logs(path)
    assert frames.slow_ops.height == 27429
    assert frames.problems.height == 1 and frames.problems["line"][0] == 1


def test_json_appended_to_a_text_log_keeps_its_lines(tmp_path, log_samples, json_log):
    text = (log_samples / "legacy-text" / "mongod_3.6.23.log").read_bytes()
    text_lines = text.count(b"\n")
    path = tmp_path / "mongod.log"
    path.write_bytes(text + json_log)
    mixed = ftdc.read_logs(path)
    alone_text = ftdc.read_logs(log_samples / "legacy-text" / "mongod_3.6.23.log")
    json_only = tmp_path / "json.log"
    json_only.write_bytes(json_log)
    alone_json = ftdc.read_logs(json_only)
    assert mixed.slow_ops.height == alone_text.slow_ops.height + 27429
    assert mixed.problems.height == alone_text.problems.height
    shifted = alone_json.slow_ops["line"] + text_lines
    assert mixed.slow_ops.filter(pl.col("line") > text_lines)["line"].to_list() == shifted.to_list()
    assert mixed.slow_ops["line"].is_sorted()


def test_a_file_named_twice_is_read_once(log_samples):
    directory = log_samples / "atlas-8.0.12"
    file = next(directory.iterdir())
    frames = ftdc.read_logs([file, directory, str(file)])
    assert frames.slow_ops.height == 43
    assert frames.slow_ops["line"].max() <= 4411


def test_rotated_files_oldest_first(tmp_path):
    names = ["mongod.log", "mongod.log.1", "mongod.log.2.gz", "mongod.log.10.gz", "mongod.log.3", "notes.json"]
    for name in names:
        (tmp_path / name).write_bytes(b"")
    found = [os.path.basename(s.name) for s in sources.expand(tmp_path)]
    assert found == ["mongod.log.10.gz", "mongod.log.3", "mongod.log.2.gz", "mongod.log.1", "mongod.log"]


def test_a_directory_without_logs_is_an_error(tmp_path):
    (tmp_path / "EXPECTED.json").write_text("{}")
    with pytest.raises(sources.SourceError, match="no log files"):
        ftdc.read_logs(tmp_path)


@pytest.mark.parametrize(
    "first",
    [
        b"2024-05-14T09:00:00.000+0000 I CONTROL  [initandlisten] MongoDB starting\n",
        b'{"t":{"$date":"2024-05-14T09:00:00.000+00:00"},"s":"I","c":"CONTROL","id":1,"ctx":"main","msg":"starting"}\n',
    ],
    ids=["text", "json"],
)
def test_problems_are_capped_per_block(tmp_path, first):
    # One real line first: a file with no log line at all is not a log (an error).
    junk = b"".join(b"junk line %d\n" % i for i in range(3 * problems.MAX_LISTED))
    path = tmp_path / "junk.log"
    path.write_bytes(first + junk)
    listed = ftdc.read_logs(path).problems
    unlisted = int(listed["reason"][-1].split()[0])
    assert listed["line"][-1] is None and listed["reason"][-1] == f"{unlisted} more problems not listed"
    assert listed.height - 1 + unlisted == 3 * problems.MAX_LISTED
    assert listed.height - 1 >= problems.MAX_LISTED - 1


def test_summary_counts_queries_once_without_index_builds(log_samples):
    import json

    expected = json.loads((log_samples / "EXPECTED.json").read_text())
    for sample, commands in [("atlas-8.0.12", "COMMAND/command"), ("mongod-6.0.11", "COMMAND/command")]:
        name = next(k for k in expected if k.startswith(sample))
        summary = ftdc.summarize_queries(ftdc.read_logs(log_samples / name).slow_ops)
        assert summary["count"].sum() == expected[name]["by"][commands]
        assert "createIndexes" not in summary["command"].to_list()


def test_text_logs_stream_in_blocks_with_years_carried_across(log_samples, monkeypatch):
    legacy = log_samples / "legacy-text"
    whole = ftdc.read_logs(legacy)
    monkeypatch.setattr(sources, "BLOCK_BYTES", 4096)  # hundreds of blocks, boundaries everywhere
    blocked = ftdc.read_logs(legacy)
    assert blocked.slow_ops.equals(whole.slow_ops) and blocked.events.equals(whole.events)
    assert blocked.problems.equals(whole.problems)
    rollover = whole.events.filter(pl.col("file").str.ends_with("year_rollover.log"))["ts"]
    assert rollover.dt.year().n_unique() == 2 and rollover.is_sorted()
