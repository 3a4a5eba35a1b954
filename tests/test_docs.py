"""The documentation's Python examples run: every ```python block of docs/ (and README.md),
page by page in one namespace, in a folder where `diagnostic.data`, `mongod.log` and
`scenarios/` are the demo node, its log and the simulated scenarios of samples/. A block
that needs what the tests cannot give (a Spark cluster, a customer's files) is preceded
by `<!-- not run: why -->`, and says why."""

import os
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
FENCE = re.compile(r"(?:<!-- not run: (?P<why>[^>]*?) -->\n)?```python\n(?P<code>.*?)\n```", re.S)


def blocks(page: Path) -> list[tuple[int, str, str | None]]:
    """(line, code, why it is not run or None) of each Python block."""
    text = page.read_text()
    return [(text.count("\n", 0, m.start("code")) + 1, m["code"], m["why"]) for m in FENCE.finditer(text)]


def test_every_block_not_run_says_why():
    for page in PAGES:
        for line, _, why in blocks(page):
            assert why is None or why.strip(), f"{page.relative_to(ROOT)}:{line}"


@pytest.mark.parametrize(
    "page", [p for p in PAGES if any(why is None for _, _, why in blocks(p))], ids=lambda p: str(p.relative_to(ROOT))
)
def test_the_python_examples_run(page, tmp_path, monkeypatch):
    for name, target in [
        ("diagnostic.data", "samples/diagnostic.data"),
        ("mongod.log", "samples/mongod.log"),
        ("scenarios", "samples/scenarios"),
    ]:
        os.symlink(ROOT / target, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    for line, code, why in blocks(page):
        if why is not None:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                exec(compile(code, f"{page.relative_to(ROOT)}:{line}", "exec"), namespace)
            except Exception as e:
                raise AssertionError(f"{page.relative_to(ROOT)}, the block at line {line}: {e!r}") from e


def test_the_layout_names_every_module():
    """docs/internals.md's layout is complete: a module added without a line there fails here."""
    page = (ROOT / "docs" / "internals.md").read_text()
    modules = [p for folder in ("analysis", "ftdc", "samples", "bench", "scripts") for p in (ROOT / folder).rglob("*.py")]
    modules += list((ROOT / "native" / "src").rglob("*.rs"))
    missing = sorted(str(p.relative_to(ROOT)) for p in modules if p.stem != "__init__" and f"`{p.stem}`" not in page)
    assert not missing, f"docs/internals.md does not name {missing}"


@pytest.mark.docs_site
def test_the_site_builds_with_every_link_and_anchor_resolved(tmp_path):
    """mkdocs.yml is strict: a broken link, a missing anchor or a page outside the nav fails the build."""
    import subprocess
    import sys

    from conftest import require_module

    require_module("mkdocs")

    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "site" / "internals" / "index.html").is_file()


CITATION = re.compile(r"docs/(?P<page>[a-z-]+\.md)(?: (?:§|section )(?P<section>\d+))?")


def test_comments_cite_pages_and_sections_that_exist():
    """Code cites the reference by page and section (`docs/metrics.md §3`): both must exist here,
    not in a document outside the repository."""
    sources = [
        p
        for folder in ("analysis", "ftdc", "samples", "bench", "scripts", "tests", "native/src")
        for p in (ROOT / folder).rglob("*")
        if p.suffix in (".py", ".rs")
    ] + [ROOT / "cli.py"]
    for path in sources:
        text = path.read_text()
        for outside in ("METRICS", "FTDC-FORMAT", "LOG-FORMAT"):  # the shared documents these pages replace
            assert outside + ".md" not in text, f"{path.relative_to(ROOT)} cites {outside}, which is outside the repository"
        for m in CITATION.finditer(text):
            page = ROOT / "docs" / m["page"]
            assert page.is_file(), f"{path.relative_to(ROOT)} cites docs/{m['page']}"
            if m["section"]:
                assert re.search(rf"^#+ {m['section']}\. ", page.read_text(), re.M), (
                    f"{path.relative_to(ROOT)} cites docs/{m['page']} §{m['section']}"
                )


def test_nothing_edits_sys_path():
    """The simulator, the benchmarks, the scripts and the notebooks' helper are packages the tests
    import through pytest's `pythonpath` (pyproject.toml); code run from the checkout runs as modules."""
    edits = re.compile(r"sys\.path\.(insert|append)|sys\.path\s*=")
    sources = [
        p
        for folder in ("tests", "bench", "samples", "scripts", "notebooks", "analysis", "ftdc")
        for p in (ROOT / folder).rglob("*.py")
    ]
    offenders = [
        f"{p.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
        for p in sources
        for text in [p.read_text()]
        for m in edits.finditer(text)
    ]
    assert not offenders, offenders


def test_the_command_line_page_shows_every_command():
    commands = re.findall(r"@app\.command\(\)\ndef (\w+)\(", (ROOT / "cli.py").read_text())
    page = (ROOT / "docs" / "cli.md").read_text()
    missing = [c for c in commands if c != "summary" and f"ftdc-analyze {c} " not in page]  # summary: `ftdc-analyze PATH`
    assert len(commands) > 3 and not missing, f"docs/cli.md does not show {missing}"


def test_the_analyses_page_says_how_every_kind_is_decided():
    from analysis.findings.detectors import RECORDS

    table = [line for line in (ROOT / "docs" / "analyses.md").read_text().splitlines() if line.startswith("| `")]
    missing = sorted(kind for kind in RECORDS if not any(f"`{kind}`" in row.split("|")[1] for row in table))
    assert not missing, f"docs/analyses.md's table of kinds lacks {missing}"
