"""Legacy text logs decoded natively (native/src/logs/text.rs) give exactly the frames the
former Python decoder gave (tests/legacy_text_reference.py): slow operations, events and
problems, on every real text log sample, cut into blocks or not, and on damaged lines."""

import os

import legacy_text_reference as reference
import pytest
from conftest import require_samples
from hypothesis import example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from bench.mutators import mutate_log
from ftdc.logs import legacy_text, reader

EXAMPLES = int(os.environ.get("FTDC_FAMILY_EXAMPLES", "60"))
HINT = 2019


def frames(result) -> tuple:
    file, slow, evts, problems, lines = result
    # Problems of one line come in no set order (the reader sorts them by line only).
    return file, slow, evts, problems.sort("line", "reason", "text", nulls_last=True), lines


def assert_same(native, former) -> None:
    native, former = frames(native), frames(former)
    assert native[0] == former[0] and native[4] == former[4]
    for new, old in zip(native[1:4], former[1:4]):
        assert_frame_equal(new, old)


def decoded_in_blocks(data: bytes, cuts: list[int]) -> tuple:
    """Both decoders over `data` cut at `cuts` (line ends), years carried between the blocks,
    each block's lines numbered on from the last."""
    years, tracker = legacy_text.Years(HINT), reference.YearTracker(HINT)
    native, former = reader._LineNumbers(), reader._LineNumbers()
    results: tuple[list, list] = ([], [])
    for start, end in zip([0, *cuts], [*cuts, len(data)]):
        block = data[start:end]
        results[0].append(native(reader.decode_text_block("f", block, len(block), years)))
        results[1].append(former(reference.decode_text_block("f", block, tracker)))
    return results


def text_samples() -> list:
    return sorted(p for p in require_samples("logs", "legacy-text").iterdir() if p.is_file())


@pytest.mark.parametrize("path", text_samples(), ids=lambda p: p.name)
def test_every_text_sample_decodes_as_before(path):
    data = path.read_bytes()
    assert_same(
        reader.decode_text_block(path.name, data, len(data), legacy_text.Years(HINT)),
        reference.decode_text_block(path.name, data, reference.YearTracker(HINT)),
    )


@pytest.mark.parametrize("name", ["year_rollover.log", "collscans.log", "mongod_4.0.10_slowoplogs.log"])
def test_blocks_carry_years_and_line_numbers(name):
    data = (require_samples("logs", "legacy-text") / name).read_bytes()
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    cuts = [ends[len(ends) // 3], ends[2 * len(ends) // 3]]
    native, former = decoded_in_blocks(data, cuts)
    for new, old in zip(native, former):
        for a, b in zip(new, old):
            if "reason" in a.columns:
                a, b = a.sort("line", "reason", "text", nulls_last=True), b.sort("line", "reason", "text", nulls_last=True)
            assert_frame_equal(a, b)


def seed_lines() -> list[bytes]:
    """Lines of every text sample: each version's envelope, ctime stamps, slow operations of every kind, JSON lines."""
    lines: list[bytes] = []
    for path in text_samples():
        lines += path.read_bytes().splitlines()[:150]
    return lines


SEEDS = seed_lines()
STAMP = "2019-06-18T11:59:16.516+0100 I COMMAND  [conn1] "


@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_damaged_lines_decode_as_before(data):
    log = mutate_log(SEEDS, data.draw(st.randoms(use_true_random=False)))
    assert_same(
        reader.decode_text_block("f", log, len(log), legacy_text.Years(HINT)),
        reference.decode_text_block("f", log, reference.YearTracker(HINT)),
    )


# What a line's words may hold that Python and Rust could read apart: Unicode digits, letters and
# spaces (0x1C-0x1F are whitespace to Python only), the grammar's punctuation and its words.
WORDS = st.sampled_from(
    [
        "command", "query", "update", "remove", "insert", "getmore", "killcursors", " ", "ms", "0", "9" * 20, "-1.0", "-",
        "\u0661", "\u00b2", "\u0345", "\u1d7d9", "\x1c", "\u3000", "\u00a0", "\r", "\x00", "\ufffd", "é", "_", ".", ":", "{", "}",
        "[", "]", '"', "'", "/", "(", ")", ",", "db.c", "db.$cmd", "command: ", "query: ", "originatingCommand: ", "sort: ",
        "orderby: ", "$orderby", "$query", "planSummary: ", "IXSCAN { a: 1 }", "COLLSCAN", "keysExamined:", "nscanned:",
        "nscannedObjects:", "code:", "errCode:", "errName:", "queryHash:", "ABC", "appName: ", "exception:", " ok:0 ",
        "locks:{ Global: { timeAcquiringMicros: { r: 12 } } }", "flowControl:{ timeAcquiringMicros: 7 }",
        "storage:{ data: { bytesRead: 5 } }", "cache: 3", "connection accepted from ", "end connection ",
        " connections now open)", "#1 (", "received client metadata from ", "driver: { name: \"x\", version: \"1\" }",
        "application: { name: \"a\" }", "MongoDB starting : pid=1 port=27017 host=h", "db version v4.2.1,",
        "wiredtiger_open config: ", "transition to PRIMARY from SECONDARY", "Stepping down", "ELECTION", "got signal",
        "Log rotation", "transaction parameters:", "DNS resolution x took 5ms", "Checkpoint took 9 seconds", "heckpoint",
        "warning: log line attempted (12k) over max size (10k), printing beginning and end ... ",
        "update", "updates: [ { q: { a: 1 } } ]", "find: \"c\", filter: { a: -1 }, sort: { a: -1.0 }",
    ]
)  # fmt: skip
ENVELOPES = st.sampled_from(
    [STAMP, "2019-06-18T11:59:16.516Z I  WRITE    [conn2] ", "2019-06-18T11:59:16 ", "Wed Mar  5 17:14:57.407 [conn4] ",
     "Fri Feb 31 01:02:03 ", "Xyz Jan  1 00:00:00.1234 ", "2019-13-45T11:59:16.516+0100 - ", "\u0662019-06-18T11:59:16.516Z D5 - [c] ", ""]
)  # fmt: skip


@settings(max_examples=EXAMPLES)
@example(lines=["Wed Mar  5 17:14:57.407 [conn4] query db.c query: { $query: { a: 1 }, $orderby: { a: -1 } } 29ms"])
@example(lines=[STAMP + 'command db.$cmd command: update { update: "orders", updates: [ { q: { a: 1 } } ] } 5ms'])
@given(
    lines=st.lists(
        st.builds(lambda head, words: head + "".join(words), ENVELOPES, st.lists(WORDS, max_size=25)), min_size=1, max_size=8
    )
)
def test_lines_of_words_decode_as_before(lines):
    log = "\n".join(lines).encode()
    assert_same(
        reader.decode_text_block("f", log, len(log), legacy_text.Years(HINT)),
        reference.decode_text_block("f", log, reference.YearTracker(HINT)),
    )


def test_deep_documents_are_reported_as_before():
    deep = STAMP + "command db.c command: find " + "{ a: " * 150 + "1" + " }" * 150 + " 5ms"
    log = f"{deep}\n{deep[:-200]} 5ms\n{deep.replace('{ a: ', '[ ', 60)}\n".encode()
    native = reader.decode_text_block("f", log, len(log), legacy_text.Years(HINT))
    assert_same(native, reference.decode_text_block("f", log, reference.YearTracker(HINT)))
    # The cut one is no document at all; the last one mixes brackets and braces.
    assert native[3].select("line", "reason").rows() == [(1, "no shape: document nested deeper than 100 levels")]
    assert native[1]["shape"].to_list() == [None, None, None]
