"""Words for people, numbers that agree (issue 18 §4): every report of the demo node, every scenario and the
replica set, in every format and on the console, names none of the project's internals, and says each
quantity once."""

import ast
import re
import warnings
from pathlib import Path

import pytest
from rich.console import Console

import analysis
from analysis.outputs.console import render_findings, render_incidents, render_overview
from analysis.outputs.report import build_report, write_report

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
SCENARIOS = SAMPLES / "scenarios"
NODES = ["demo", *sorted(p.name for p in SCENARIOS.iterdir() if (p / "truth.json").exists())]
FORMATS = (".html", ".md", ".json")


def _constants() -> set[str]:
    """The module-level UPPER_CASE names of the project's code (those of one word, `KIND` or `MB`, are words too)."""
    names = set()
    for path in [*ROOT.glob("analysis/**/*.py"), *ROOT.glob("ftdc/**/*.py"), ROOT / "cli.py"]:
        for node in ast.parse(path.read_text()).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            names.update(t.id.lstrip("_") for t in targets if isinstance(t, ast.Name) and re.fullmatch(r"_?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+", t.id))
    return names


CONSTANTS = _constants()
# The project's own files (code, scripts, documentation pages) by name.
OWN_FILES = {p.name for p in ROOT.rglob("*") if p.suffix in (".py", ".js", ".rs", ".md") and ".git" not in p.parts and p.name != "README.md"}
# Server and WiredTiger sources, document sections.
SOURCES = re.compile(r"\b[\w-]+\.(?:py|c|cc|cpp|h|rst|md)\b|§")


def _analyzed(name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "demo":
            return [analysis.analyze(SAMPLES / "diagnostic.data", SAMPLES / "mongod.log")], []
        folder = SCENARIOS / name
        if (folder / "diagnostic.data").is_dir():
            log = next(p for p in folder.iterdir() if p.name.startswith("mongod.log"))
            return [analysis.analyze(folder / "diagnostic.data", log)], []
        result = analysis.analyze_nodes(sorted(folder.glob("node*/diagnostic.data")), folder)
        return result.nodes, result.cross_node


@pytest.fixture(scope="module", params=NODES)
def analyzed(request):
    return request.param, *_analyzed(request.param)


def internals(text: str) -> list[str]:
    return sorted({*(n for n in CONSTANTS if re.search(rf"\b{n}\b", text)), *(f for f in OWN_FILES if f in text),
                   *(m.group(0) for m in SOURCES.finditer(text))})


def test_the_check_sees_what_it_looks_for():
    assert {"MIN_S", "EPISODE_GAP", "DIP_SHARE", "LOW_SHARE"} <= CONSTANTS and {"throughput_dip.py", "metrics.md", "explorer.js"} <= OWN_FILES
    said = "below DIP_SHARE of it (throughput_dip.py, conn_cache.c, SERVER-STATUS.md §5, docs/config-audit.md)"
    assert internals(said) == ["DIP_SHARE", "SERVER-STATUS.md", "config-audit.md", "conn_cache.c", "throughput_dip.py", "§"]


def test_no_internal_name_in_any_report_or_on_the_console(analyzed, tmp_path):
    name, nodes, cross = analyzed
    report = build_report(nodes, cross)
    for fmt in FORMATS:
        path = tmp_path / f"{name}{fmt}"
        write_report(report, path)
        assert internals(path.read_text()) == [], (name, fmt)
    console = Console(record=True, width=120, file=open("/dev/null", "w"))
    for node in nodes:
        console.print(render_overview(node.overview, 120), render_incidents(node, 120), render_findings(node, 120))
    text = console.export_text()
    assert internals(text) == [] and "culprits below" not in text, name
