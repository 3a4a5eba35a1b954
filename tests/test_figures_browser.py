"""The report's figures as a person reads them, in Chromium at 1400 and 800 px: no two texts of a figure overlap
(their boxes as the browser laid them out, in the page), none is smaller than 10 px on the screen, none leaves its
figure. The demo's report, and a noisy figure: forty findings close together, several thresholds and a note on one
panel, and an election mark, as a week's capture draws them."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.test_browser import Chromium, build_demo_report, require_chromium

pytestmark = pytest.mark.browser

# For each figure: pairs of texts whose boxes overlap, texts under 10 px on the screen, texts outside the figure.
MEASURE = """(() => [...document.querySelectorAll('div.plot')].filter(d => !d.closest('details:not([open])')).map(holder => {
  const svg = holder.querySelector('svg'), box = svg.getBoundingClientRect(), scale = box.width / svg.viewBox.baseVal.width;
  const texts = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim());
  const boxes = texts.map(t => t.getBoundingClientRect());
  const overlaps = [];
  boxes.forEach((a, i) => boxes.slice(i + 1).forEach((b, j) => {
    if (a.right > b.left + 0.5 && b.right > a.left + 0.5 && a.bottom > b.top + 0.5 && b.bottom > a.top + 0.5)
      overlaps.push([texts[i].textContent, texts[i + 1 + j].textContent]); }));
  const small = texts.filter(t => parseFloat(getComputedStyle(t).fontSize) * scale < 10)
    .map(t => [t.textContent, parseFloat(getComputedStyle(t).fontSize) * scale]);
  const outside = texts.filter((t, i) => boxes[i].left < box.left - 1 || boxes[i].right > box.right + 1).map(t => t.textContent);
  return {label: holder.getAttribute('aria-label'), texts: texts.length, overlaps, small, outside};
}))()"""


def _noisy_page(path) -> None:
    """A page of the report's own style holding a figure of the demo node with forty findings in its first minutes,
    a panel with thresholds and a series at zero throughout, and an election."""
    import analysis
    from analysis.outputs.report import figures, html, plots

    node = analysis.analyze(build_demo_report.__globals__["SAMPLES"] / "diagnostic.data")
    first, last = node.overview.first, node.overview.last
    spans = [
        plots.Span(
            first + dt.timedelta(seconds=7 * k), first + dt.timedelta(seconds=7 * k + 30), ("warning", "critical")[k % 2], f"F{k}"
        )
        for k in range(40)
    ]
    marks = [plots.Mark(first + dt.timedelta(seconds=20), "election: db-prod-02.example.net:27017 primary")]
    svg = plots.figure(figures._panels(node), node, first, last, spans, title="Timeline of a noisy capture", marks=marks)
    body = f'<div class="finding warning"><div class="plot" role="img" aria-label="noisy">{svg}</div></div>'
    path.write_text(html.page("noisy", body, []))


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    folder = tmp_path_factory.mktemp("figures")
    build_demo_report(folder / "report.html")
    _noisy_page(folder / "noisy.html")
    return folder


@pytest.mark.parametrize("width", [1400, 800])
@pytest.mark.parametrize("page", ["report", "noisy"])
def test_figure_texts_never_overlap_and_read_at_both_widths(pages, page, width):
    binary = require_chromium()
    with Chromium(binary, width=width, height=900) as browser:
        browser.open((pages / f"{page}.html").as_uri())
        browser.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        figures = browser.evaluate(MEASURE)
        errors = browser.errors()
    assert figures and errors == [], errors
    for figure in figures:
        assert figure["texts"] > 10, figure
        assert figure["overlaps"] == [], (figure["label"], figure["overlaps"][:5])
        assert figure["small"] == [], (figure["label"], figure["small"][:5])
        assert figure["outside"] == [], (figure["label"], figure["outside"])
