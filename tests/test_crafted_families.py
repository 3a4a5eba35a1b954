"""Families of crafted input through the command line (issue 15): random bytes, a real file
cut at any offset, bit flips, for the summary (table and JSON) and the logs command. Each run
ends in output (exit 0, damage as warnings) or warnings and then one error line (exit 2):
never a traceback. In-process, so a hundred examples take seconds."""

import gzip
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import cli

DEMO = Path(__file__).resolve().parents[1] / "samples"
FTDC_FILE = DEMO / "diagnostic.data" / "metrics.2024-05-14T09-00-00Z-00000"
# The type-0 document and the first chunks: small enough to cut anywhere quickly.
SMALL_FTDC = FTDC_FILE.read_bytes()[:46256]
LOG_GZ = gzip.compress(b"".join((DEMO / "mongod.log").read_bytes().splitlines(keepends=True)[:120]), mtime=0)
FAMILY = settings(max_examples=100)


def check(args: list[str]) -> None:
    result = CliRunner().invoke(cli.app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.stderr.splitlines()
    assert result.exit_code in (0, 2), (result.exit_code, result.stderr)
    if result.exit_code == 2:
        assert lines and lines[-1].startswith("error: ") and all(line.startswith("warning: ") for line in lines[:-1]), (
            result.stderr
        )
        assert result.stdout == ""
    else:
        assert all(line.startswith(("warning: ", "read the log", "no mongod log found: ")) for line in lines), result.stderr


def summary_of(data: bytes, as_json: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        node = Path(folder) / "diagnostic.data"
        node.mkdir()
        (node / FTDC_FILE.name).write_bytes(data)
        check([str(node), *(["--json"] if as_json else [])])


def flipped(data: bytes, positions: list[int]) -> bytes:
    out = bytearray(data)
    for position in positions:
        out[position % len(out) // 8] ^= 1 << position % 8
    return bytes(out)


@FAMILY
@given(data=st.binary(max_size=4096), as_json=st.booleans())
def test_random_bytes_as_ftdc(data, as_json):
    summary_of(data, as_json)


@FAMILY
@given(cut=st.integers(0, len(SMALL_FTDC)), as_json=st.booleans())
def test_ftdc_cut_at_any_offset(cut, as_json):
    summary_of(SMALL_FTDC[:cut], as_json)


@FAMILY
@given(positions=st.lists(st.integers(0, 8 * len(SMALL_FTDC) - 1), min_size=1, max_size=2000), as_json=st.booleans())
def test_ftdc_with_bit_flips(positions, as_json):
    summary_of(flipped(SMALL_FTDC, positions), as_json)


def logs_of(data: bytes, name: str, fmt: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / name
        log.write_bytes(data)
        check(["logs", str(log), "--format", fmt])


@FAMILY
@given(cut=st.integers(0, len(LOG_GZ)), fmt=st.sampled_from(["table", "json"]))
def test_gzipped_log_cut_at_any_offset(cut, fmt):
    logs_of(LOG_GZ[:cut], "mongod.log.gz", fmt)


@FAMILY
@given(positions=st.lists(st.integers(0, 8 * len(LOG_GZ) - 1), min_size=1, max_size=200), fmt=st.sampled_from(["table", "json"]))
def test_gzipped_log_with_bit_flips(positions, fmt):
    logs_of(flipped(LOG_GZ, positions), "mongod.log.gz", fmt)


@FAMILY
@given(data=st.binary(max_size=4096), fmt=st.sampled_from(["table", "json", "csv"]))
def test_random_bytes_as_a_log(data, fmt):
    logs_of(data, "mongod.log", fmt)
