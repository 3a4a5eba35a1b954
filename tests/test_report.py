"""Incident reports: HTML (self-contained), Markdown with its SVG figures, JSON with a schema version."""

import base64
import datetime as dt
import hashlib
import json
import re
import subprocess
import sys
import warnings
from html import escape
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import analysis
from analysis.nodes import compose
from analysis.outputs import document
from analysis.outputs.report import build_report, content, explorer_page, html, plots, write_report

DEMO = Path(__file__).resolve().parents[1] / "samples"


@pytest.fixture(scope="module")
def demo():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return analysis.analyze(DEMO / "diagnostic.data", DEMO / "mongod.log")


@pytest.fixture(scope="module")
def report(demo):
    return build_report([demo])


def test_the_reports_explorer_says_what_it_holds_and_where_every_metric_is(report):
    """The report's explorer holds the analysis's series, not every metric: its heading promises no more, and the
    line under it names the page that holds every metric."""
    page = html.render(report)
    heading = re.search(r"<h\d>(Metric explorer[^<]*)</h\d>", page)[1]
    assert "any metric" not in heading and "the analysis&#x27;s series" in heading
    assert html.EXPLORER_HOLDS in page and "<code>ftdc-analyze explore</code>" in html.EXPLORER_HOLDS


def test_html_is_self_contained_and_complete(report, demo, tmp_path):
    path = tmp_path / "incident.html"
    assert write_report(report, path) == [path]
    page = path.read_text()
    assert page.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in page
    # Nothing that could reach a network: no links or remote sources, and only the page's own inline scripts (issue 20:
    # sorting in the page, the metric explorer's uPlot and code), each allowed by its hash: the CSP names no source a
    # script could be loaded from. The explorer's data is a JSON block, which is not run.
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert scripts == [html.workbench.SCRIPT, html.KEYS, *explorer_page.scripts()]
    assert re.findall(r"<script[^>]*>", page) == ['<script type="application/json" class="explorer-data">'] + ["<script>"] * len(
        scripts
    )
    policy = re.search(r'Content-Security-Policy content="([^"]+)"', page)[1]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    digests = [f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in scripts]
    assert directives["script-src"] == " ".join(digests) and directives["default-src"] == "'none'"
    assert "fetch(" not in scripts[0] and "XMLHttpRequest" not in scripts[0] and "src=" not in scripts[0]
    assert "<link" not in page and not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert all(escape(h) in page for h in report.headlines) and "What to do" in page
    problems = demo.problems
    cards = re.findall(r'<div class="finding (critical|warning)"', page)
    assert len(cards) == len(problems)
    # Every incident has its own plot (an inline SVG), which draws the findings folded into it, plus the timeline and the system panels.
    assert (
        page.count('<div class="plot" role="img"')
        == page.count('<svg xmlns="http://www.w3.org/2000/svg" class="plot"')
        == len(demo.incidents) + 2
    )
    assert "createIndex({ status: 1, total: 1 })" in page and "Methods" in page and "checkpoint_stall" in page


def test_markdown_writes_its_figures_beside_it(report, tmp_path):
    path = tmp_path / "incident.md"
    written = write_report(report, path)
    text = path.read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert links and all((tmp_path / link).is_file() for link in links)
    assert set(written[1:]) == {tmp_path / link for link in links}
    assert text.startswith("# ftdc-analyze report") and "| shop.orders | aggregate | COLLSCAN |" in text
    # Incidents first: the first figure and the first section after the headlines are the incident's.
    assert text.index("## Incidents") < text.index("## Findings") and links[0].endswith("-i1.svg")


def test_json_report_has_a_schema_version_and_the_analysis(report, demo, tmp_path):
    path = tmp_path / "incident.json"
    write_report(report, path)
    doc = json.loads(path.read_text())
    assert doc["schema_version"] == content.SCHEMA_VERSION == 3
    assert set(doc) == {
        "schema_version",
        "generated",
        "title",
        "headlines",
        "redacted",
        "nodes",
        "cross_node_findings",
        "cross_node_incidents",
    }
    node = doc["nodes"][0]
    assert node["findings"] == demo.to_dict()["findings"] and node["node"]["host"] == "db-prod-01.example.net"
    assert node["incidents"] == demo.to_dict()["incidents"] and len(node["headlines"]) == len(demo.incidents) == len(
        doc["headlines"]
    )
    ids = {f["id"] for f in node["findings"]}
    assert all(f["id"] for f in node["findings"]) and all(set(i["finding_ids"]) <= ids for i in node["incidents"])


# What a figure may hold: shapes, text and a gradient. No script, link, image, style sheet, metadata or comment.
DRAWING = {"svg", "g", "path", "rect", "text", "tspan", "defs", "linearGradient", "stop", "pattern"}


def test_plots_are_well_formed_drawings_that_carry_nothing_else(report):
    figures = [
        report.nodes[0].timeline,
        report.nodes[0].system_figure,
        *report.nodes[0].evidence.values(),
        *(c.figure for c in report.incidents),
    ]
    assert figures
    for figure in figures:
        root = ElementTree.fromstring(figure.svg)  # well-formed XML, or this raises
        tags = {element.tag.split("}")[1] for element in root.iter()}
        assert tags <= DRAWING, tags - DRAWING
        assert not any("href" in name for element in root.iter() for name in element.attrib)
        assert "<!--" not in figure.svg and "<?" not in figure.svg


def test_figure_text_from_input_is_escaped_and_well_formed():
    """A namespace is the customer's text: markup in it stays text, a control character (invalid in XML) is shown as an escape."""
    hostile = "<script>alert(1)</script>&\x01\x1b[31m\ud800\"x'"
    drawn = plots.text(hostile)
    root = ElementTree.fromstring(f'<svg xmlns="http://www.w3.org/2000/svg"><text data-label="{drawn}">{drawn}</text></svg>')
    [element] = list(root)
    assert element.text == element.get("data-label") == "<script>alert(1)</script>&\\x01\\x1b[31m\ufffd\"x'"


@settings(max_examples=200)
@given(st.text())
def test_any_text_is_drawn_as_well_formed_xml(value):
    drawn = plots.text(value)
    [element] = list(ElementTree.fromstring(f'<svg><text a="{drawn}">{drawn}</text></svg>'))
    assert (element.text or "") == element.get("a")
    assert all(ch not in (element.text or "") for ch in "\x00\x01\x1b\x7f")


def test_downsampling_keeps_a_one_sample_spike():
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    n = 200_000
    values = [1.0] * n
    values[123_457] = 500.0
    frame = pl.DataFrame(
        {"start": pl.datetime_range(t0, t0 + dt.timedelta(seconds=n - 1), "1s", eager=True, time_zone="UTC"), "x": values}
    )
    small = plots.pixel_columns(frame, ["x"], t0, t0 + dt.timedelta(seconds=n), pixels=1000)
    assert small.axis.columns <= 1000 and np.nanmax(small.pairs["x"][:, 1]) == 500.0 and np.nanmin(small.pairs["x"][:, 0]) == 1.0


def test_a_failed_write_leaves_the_previous_report(report, tmp_path, monkeypatch):
    path = tmp_path / "incident.html"
    path.write_text("previous")

    def broken(_):
        raise KeyboardInterrupt

    monkeypatch.setattr(html, "render", broken)
    with pytest.raises(KeyboardInterrupt):
        write_report(report, path)
    assert path.read_text() == "previous" and list(tmp_path.iterdir()) == [path]


def test_report_from_the_command_line(tmp_path):
    out = tmp_path / "r.html"
    result = subprocess.run(
        [sys.executable, "-m", "cli", str(DEMO / "diagnostic.data"), "--log", str(DEMO / "mongod.log"), "--report", str(out)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 10_000 and f"wrote {out}" in result.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "cli", str(DEMO / "diagnostic.data"), "--report", str(tmp_path / "r.pdf")],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "unsupported report type" in bad.stderr


def test_findings_render_in_jupyter(demo):
    card = demo.problems[0]._repr_html_()
    assert card.startswith('<div class="ftdc-analyze">') and demo.problems[0].title in card.replace("&#x27;", "'")
    page = demo._repr_html_()
    assert page.count('<div class="finding') == len(demo.problems)


def test_a_long_week_shows_the_most_severe_as_cards_and_lists_the_rest(demo, tmp_path):
    import dataclasses

    many = [
        dataclasses.replace(f, start=f.start + dt.timedelta(hours=h), end=f.end + dt.timedelta(hours=h))
        for h in range(16)
        for f in demo.problems
    ]
    week = dataclasses.replace(demo.result, findings=sorted(many, key=analysis.Finding.rank))
    [busy] = compose([dataclasses.replace(demo, result=week)]).nodes
    report = build_report([busy])
    section = report.nodes[0]
    assert len(section.carded) == document.MAX_CARDS and len(section.listed) == len(many) - document.MAX_CARDS
    # A carded finding has a plot of its own unless its incident's card draws it.
    in_cards = {f for card in section.incidents for f in card.incident.finding_ids}
    assert set(section.evidence) == {i for i in section.carded if section.findings[i].id not in in_cards}
    # The incidents likewise: the most severe as cards with a headline each, then how many more.
    assert len(busy.incidents) > document.MAX_CARDS and len(section.incidents) == document.MAX_CARDS
    assert (
        len(report.headlines) == document.MAX_CARDS + 1
        and f"{len(busy.incidents) - document.MAX_CARDS} more, less severe incidents" in report.headlines[-1]
    )
    assert len(report.more_incidents) == len(busy.incidents) - document.MAX_CARDS
    path = tmp_path / "busy.html"
    write_report(report, path)
    page = path.read_text()
    assert page.count('<div class="finding ') == document.MAX_CARDS
    assert f"{len(many) - document.MAX_CARDS} more findings" in page and page.count("<tr><td>") >= len(many) - document.MAX_CARDS
    assert len(json.loads(report_json(report))["nodes"][0]["findings"]) == len(many)


def report_json(report) -> str:
    return json.dumps(report.to_dict())
