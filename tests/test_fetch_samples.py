"""scripts/fetch_samples.py: the manifest names every sample the tests read with its digest,
a fetch places only files whose SHA-256 is right, and never leaves a partial file."""

import io
import shutil
from pathlib import Path

import pytest
from conftest import SHARED_SAMPLES, require_samples

from scripts import fetch_samples


def test_the_manifest_lists_every_shared_sample_and_each_is_right():
    require_samples()
    on_disk = {p.relative_to(SHARED_SAMPLES).as_posix() for p in SHARED_SAMPLES.rglob("*") if p.is_file()} - {"SOURCES.md"}
    assert {e["file"] for e in fetch_samples.manifest()} == on_disk
    out = io.StringIO()
    assert fetch_samples.run(SHARED_SAMPLES, only_check=True, out=out) == 0, out.getvalue()


def _origin(tmp_path: Path) -> str:
    """The samples laid out as GitHub serves them (repository/commit/path), as a file: URL."""
    for entry in fetch_samples.manifest():
        if "repo" in entry:
            place = tmp_path / "origin" / entry["repo"] / entry["commit"] / entry["path"]
            place.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(SHARED_SAMPLES / entry["file"], place)
    return (tmp_path / "origin").as_uri() + "/{repo}/{commit}/{path}"


def test_a_fetch_into_an_empty_folder_places_every_file_with_an_origin(tmp_path):
    require_samples()
    origin, dest, out = _origin(tmp_path), tmp_path / "samples", io.StringIO()
    assert fetch_samples.run(dest, only_check=False, origin=origin, out=out) == 1  # the EXPECTED.json files
    for entry in fetch_samples.manifest():
        assert (fetch_samples.check(entry, dest) is None) == ("repo" in entry), entry["file"]
    assert "ftdc/EXPECTED.json: missing; it has no public origin" in out.getvalue()
    assert fetch_samples.run(dest, only_check=False, origin=origin, out=io.StringIO()) == 1  # nothing fetched twice


def test_a_file_whose_digest_differs_is_not_placed(tmp_path):
    require_samples()
    origin, dest = _origin(tmp_path), tmp_path / "samples"
    entry = next(e for e in fetch_samples.manifest() if e["file"].endswith("perf_metrics_small.ftdc"))
    served = tmp_path / "origin" / entry["repo"] / entry["commit"] / entry["path"]
    data = served.read_bytes()
    served.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # one bit differs
    try:
        fetch_samples.fetch(entry, dest, origin)
    except ValueError as e:
        assert "SHA-256" in str(e) and entry["sha256"] in str(e)
    else:
        raise AssertionError("a file with the wrong digest was accepted")
    assert list((dest / entry["file"]).parent.iterdir()) == []  # neither the file nor a partial one
    assert fetch_samples.check(entry, dest) == "missing"


def test_a_missing_sample_says_how_to_fetch_it(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"python3 scripts/fetch_samples\.py"):
        require_samples("no-such-sample")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"python3 scripts/fetch_samples\.py"):
        require_samples("no-such-sample")
