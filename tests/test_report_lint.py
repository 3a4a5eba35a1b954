"""The report lint (issue 39 §6): every scenario, the real samples and a few family draws, in every format a reader gets
(the terminal, Markdown, the HTML page's text, the JSON's prose fields), checked against rules a support engineer's
reader would apply: times carry their zone, no internal identifier (a detector's kind, an evidence key, a function
of the code) stands in a sentence.

The rules are data: `RULES` holds each one's name, why it exists and the function that finds its breaches in a text.
Another rule is one more entry (and, where it needs to know the project's names, one more field of `Vocabulary`).
"""

from __future__ import annotations

import ast
import datetime as dt
import html
import json
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path

import msgspec
import pytest
from rich.console import Console
from scenario_nodes import SCENARIO_NAMES, analyzed_result

import analysis
from analysis.findings.detectors import MODULES, NAMES, RECORDS
from analysis.nodes import NodesAnalysis
from analysis.outputs import shape, words
from analysis.outputs.console import render_findings, render_incidents, render_overview
from analysis.outputs.report import build_report, write_report
from analysis.settings import RECORDS as SETTING_RECORDS
from ftdc.timeutil import PRECISE_UNDER
from samples.families import Incident, Shape, analyzed, build

ROOT = Path(__file__).resolve().parents[1]
UTC = dt.timezone.utc


# --- what the rules know of the project ------------------------------------------------------------------------------


def _function_names() -> frozenset[str]:
    """Every function and method the code defines whose name is an identifier, not a word (`summarize_queries`)."""
    names = set()
    for path in [*ROOT.glob("analysis/**/*.py"), *ROOT.glob("ftdc/**/*.py"), ROOT / "cli.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "_" in node.name.strip("_"):
                names.add(node.name.strip("_"))
    return frozenset(names)


def _configuration_names() -> frozenset[str]:
    """The names a customer types into their configuration (`eviction_dirty_target`, `threads_max`): the advice quotes
    them as they are set, so they are words to this reader, whatever the code also calls them."""
    names = {s.wt_key for s in SETTING_RECORDS if s.wt_key} | {s.label for s in SETTING_RECORDS}
    names |= {token for s in SETTING_RECORDS for token in re.findall(r"[A-Za-z]\w*_\w+", s.how)}
    return frozenset(part for name in names for part in (name, *name.split("."), *name.split(" ")) if "_" in part)


def _keys(value) -> Iterator[str]:
    """Every key of an evidence value, nested records' fields included."""
    if is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in fields(value) if f.repr}
    if isinstance(value, dict):
        for key, inner in value.items():
            yield str(key)
            yield from _keys(inner)
    elif isinstance(value, (list, tuple)):
        for inner in value:
            yield from _keys(inner)


@dataclass(frozen=True)
class Vocabulary:
    """The identifiers no sentence may show: detector kinds, evidence keys (snake_case), function names; less the
    configuration names the customer sets by those very words."""

    kinds: frozenset[str]
    evidence_keys: frozenset[str]
    functions: frozenset[str]
    configuration: frozenset[str]

    @classmethod
    def of(cls, nodes) -> Vocabulary:
        evidence = [f.evidence for node in nodes for f in node.findings] + [
            c.evidence for node in nodes for i in node.incidents for c in (i.root_cause, *i.candidates)
        ]
        keys = {k for e in evidence for k in _keys(e) if "_" in k.strip("_")}
        return cls(frozenset(RECORDS), frozenset(keys), FUNCTIONS, CONFIGURATION)


FUNCTIONS = _function_names()
CONFIGURATION = _configuration_names()


# --- the rules -------------------------------------------------------------------------------------------------------

_CLOCK = r"\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
# A time of day, not an offset (`-03:00`) nor part of a longer number.
TIME = re.compile(rf"(?<![\d:+\-−.]){_CLOCK}(?![\d:])")
# What may follow a time: its zone, directly or after the other end of a range. ISO-8601's `Z` is a zone too, which only
# the terminal's restart lines still print (`2024-05-30T22:40:00Z`); the rest says UTC.
ZONE = r"(?:Z\b|\s*UTC\b|\s+in the log's\b)"
ZONED = re.compile(rf"(?:{ZONE}|\s*(?:–|-|to|and)\s*(?:\d{{4}}-\d{{2}}-\d{{2}}[ T])?{_CLOCK}{ZONE})")


def times_without_zone(text: str, _: Vocabulary) -> list[str]:
    """Every time of day must say its zone: UTC (or `Z` in ISO-8601), or the log's offset it is given in."""
    return [text[max(0, m.start() - 30) : m.end() + 12] for m in TIME.finditer(text) if not ZONED.match(text, m.end())]


def _named(text: str, names: frozenset[str]) -> list[str]:
    """The identifiers of `names` (snake_case: a one-word kind such as `restart` is a word) that `text` shows."""
    return sorted(n for n in names if "_" in n and re.search(rf"(?<![\w.$]){re.escape(n)}(?!\w)", text))


def detector_kinds(text: str, vocabulary: Vocabulary) -> list[str]:
    """A detector's kind (`checkpoint_stall`) is its record's name in prose ("checkpoint stall")."""
    return _named(text, vocabulary.kinds - vocabulary.configuration)


def evidence_keys(text: str, vocabulary: Vocabulary) -> list[str]:
    """An evidence key (`writes_per_s`, `carried_by`) is shown by its label ("writes per second")."""
    return _named(text, vocabulary.evidence_keys - vocabulary.kinds - vocabulary.configuration)


def function_names(text: str, vocabulary: Vocabulary) -> list[str]:
    """No caption or sentence credits the code ("Counts and percentiles are summarize_queries'")."""
    return _named(text, vocabulary.functions - vocabulary.evidence_keys - vocabulary.kinds - vocabulary.configuration)


# A latency rounded to nothing: "Mean write latency reached 0 ms" beside "Usual write latency: 0.3 ms".
ZERO_MS = re.compile(r"(?<![\d.,])0 ms\b")


def milliseconds_rounded_away(text: str, _: Vocabulary) -> list[str]:
    """A time under 10 ms keeps two significant figures (`analysis.text.ms`): none reads `0 ms`."""
    return [text[max(0, m.start() - 40) : m.end()] for m in ZERO_MS.finditer(text)]


# A checkpoint's `source` as the code tags it ("the longest from 03:40:30 UTC, ftdc+log").
SOURCE_TAG = re.compile(r"\bftdc\+log\b|, (?:ftdc|log)\)")


def source_tags(text: str, _: Vocabulary) -> list[str]:
    """Where a checkpoint was seen is said in words ("seen in both FTDC and the log")."""
    return [text[max(0, m.start() - 40) : m.end()] for m in SOURCE_TAG.finditer(text)]


# A share (0..1) shown as the fraction the data holds: "share 1", "time share 0.425", "checkpoint time share: 0.425".
RAW_SHARE = re.compile(r"\bshare:? (?:0?\.\d+|[01])(?!\d|[.,]\d| ?%)")


def shares_as_fractions(text: str, _: Vocabulary) -> list[str]:
    """A share is a percentage with the prose's rounding (`42 %` beside the sentence's 42 %, not `0.425`)."""
    return [text[max(0, m.start() - 40) : m.end()] for m in RAW_SHARE.finditer(text)]


def hour_claimed_by_a_label(text: str, _: Vocabulary) -> list[str]:
    """An evidence label does not say what a baseline rests on ("writes per second in the hour before: 800" beside
    "the median of the 40 min 30 s before"): the baseline's own line does."""
    return re.findall(r"[^\n]{0,40}in the hour before: \d", text)


def ram_in_megabytes(text: str, _: Vocabulary) -> list[str]:
    """RAM is said in one unit, GB with one decimal (`analysis.text.ram`): not "32,000 MB RAM" beside "31.2 GB RAM"."""
    return re.findall(r"[\d,.]+ MB (?:of )?RAM", text)


def names_lowered(text: str, _: Vocabulary) -> list[str]:
    """A finding's kind opens a line with its record's name as it is ("TTL deletion burst"), its first letter raised and
    nothing lowered ("Ttl deletion burst")."""
    lowered = {n.capitalize() for n in NAMES.values() if n.capitalize() != n[:1].upper() + n[1:]}
    return [n for n in sorted(lowered) if re.search(rf"(?<!\w){re.escape(n)}(?!\w)", text)]


# A table cell that is a code span of nothing.
EMPTY_CODE = re.compile(r"\| *(`+) +\1 *(?=\|)")


def blank_plans_and_shapes(text: str, _: Vocabulary) -> list[str]:
    """A slow operation's plan, shape and clients say why there is none ("none: an insert has no plan", "not named in the
    log"): not an empty cell, nor an empty code span, which say nothing (ledger.entries insert read "|  |" and "`  `";
    read-tickets-4.2's clients of the shapes whose lines name no application)."""
    out = [text[max(0, m.start() - 40) : m.end()] for m in EMPTY_CODE.finditer(text)]
    header: list[str] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not set(line) <= set("|-: ") and len(cells) == len(header):
            out += [line for name in ("plan", "shape", "clients") if name in header and not cells[header.index(name)]]
    return out


# A root cause's evidence list (Markdown's `- label: value` lines) listing what is no fact of the cause: the finding it
# rests on by id, the detector's thresholds dumped ("thresholds: lock wait threads 0.1, gather (ms) 1,000, ...").
INTERNAL_ITEM = re.compile(r"(?m)^- (?:finding: F\d+|thresholds: [^\n]*)$")


def internal_items(text: str, _: Vocabulary) -> list[str]:
    """An evidence list holds the cause's facts: the card names its findings, and a threshold is explained in its
    finding's own text."""
    return INTERNAL_ITEM.findall(text)


def labels_said_twice(text: str, _: Vocabulary) -> list[str]:
    """A root cause's evidence list (Markdown's `- label: value` lines under its sentence) says each thing once: no
    label twice."""
    twice = []
    for block in re.findall(r"(?m)^\*\*Root cause [^\n]*\n\n((?:^- [^\n:]+: [^\n]*\n?)+)", text):
        labels = re.findall(r"(?m)^- ([^\n:]+): ", block)
        twice += sorted({label for label in labels if labels.count(label) > 1})
    return twice


# A nested record's keys read one by one into a sentence: "checkpoints the usual is the median of 59, the usual rests on
# checkpoints since 02:00:31 UTC".
GARBLED = re.compile(r"checkpoints the usual is the median of \d|the usual rests on checkpoints since")


def nested_records_garbled(text: str, _: Vocabulary) -> list[str]:
    """A value holding several facts (the checkpoints of a window) reads as one sentence, not its fields' labels."""
    return GARBLED.findall(text)


# A setting's source as the code tagged it: "(log 22315 Opening WiredTiger (mongod.log:3): eviction.threads_max=4)".
SOURCE_ID = re.compile(r"\(log \d+|\b[\w.-]+\.log:\d+")


def sources_as_ids(text: str, _: Vocabulary) -> list[str]:
    """Where a setting was read is said in words ("from the log's "Opening WiredTiger" line, mongod.log line 3")."""
    return [text[max(0, m.start() - 30) : m.end() + 20] for m in SOURCE_ID.finditer(text)]


def nothing_counted_as_a_table(text: str, _: Vocabulary) -> list[str]:
    """A list with nothing in it says so ("No slow operations were logged"): not "the 0 with the most" above an empty
    table, nor a `` code span with nothing in it."""
    return re.findall(r"[^\n]{0,40}\b0 (?:with the most|query shape\(s\))[^\n]{0,20}|(?<!`)``(?!`)", text)


# A parenthesis inside a parenthesis, both closing at once: "60 s (mongod default (storage.syncPeriodSecs / syncdelay))"
# (a plural's "(s)" is a rule of its own).
NESTED_PARENTHESES = re.compile(r"\([^()\n]*\((?!s\))[^()\n]*\)\)")


def nested_parentheses(text: str, _: Vocabulary) -> list[str]:
    """A source said inside a value's parentheses carries none of its own ("60 s (mongod's default for
    storage.syncPeriodSecs)"): brackets closing in a pile are read back to front."""
    return NESTED_PARENTHESES.findall(text)


def placeholders_for_absent_values(text: str, _: Vocabulary) -> list[str]:
    """An evidence item whose value is not known is left out ("- query hash: -" says nothing)."""
    return re.findall(r"(?m)^\s*-\s[^\n:]{1,60}: -\s*$", text)


_WINDOW_MS = re.compile(r"(\d{2}):(\d{2}):(\d{2})\.(\d{3}) – (?:\d{4}-\d{2}-\d{2} )?(\d{2}):(\d{2}):(\d{2})\.(\d{3})")


def milliseconds_in_long_windows(text: str, _: Vocabulary) -> list[str]:
    """A window's ends are in whole seconds unless it is shorter than the milliseconds matter (ftdc.timeutil's
    PRECISE_UNDER): not "03:00:30.005 – 03:29:55.005 UTC"."""
    out = []
    for m in _WINDOW_MS.finditer(text):
        h1, m1, s1, ms1, h2, m2, s2, ms2 = map(int, m.groups())
        seconds = ((h2 - h1) * 3600 + (m2 - m1) * 60 + (s2 - s1) + (ms2 - ms1) / 1000) % 86400
        if seconds >= PRECISE_UNDER.total_seconds():
            out.append(m.group(0))
    return out


def windows_said_twice(text: str, _: Vocabulary) -> list[str]:
    """A sentence gives a window once: not in words and then again as a range ("mongod restarted between 22:36:59 and
    22:40:00 UTC …: 22:36:59 – 22:40:00 UTC"); the page's text has no lines, so a sentence is what 100 characters hold."""
    said = r"(?:between|from) (?:\S+ )?(\d{2}:\d{2}:\d{2})\b\S* (?:and|to) (?:\S+ )?(\d{2}:\d{2}:\d{2})\b"
    return re.findall(rf"{said}[^\n]{{0,100}}?\b\1 – (?:\S+ )?\2\b", text)


def ram_in_whole_gigabytes(text: str, _: Vocabulary) -> list[str]:
    """RAM keeps the decimal `analysis.text.ram` gives it: "31 GB of RAM" beside "31.2 GB RAM" is one quantity twice."""
    return re.findall(r"(?<![\d.,])\d[\d,]* GB (?:of )?RAM", text)


# Three or more dated times in a row: a list (a loop's restarts, hundreds of them) belongs to the JSON's data.
TIME_LIST = re.compile(r"(?:\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC(?:, [^;\n]{0,40})?; ){2,}\d{4}-\d{2}-\d{2}")


def times_listed(text: str, _: Vocabulary) -> list[str]:
    """Many times are said as their count, the first and the last (`analysis.text.first_and_last`), not one by one."""
    return [m.group(0)[:80] for m in TIME_LIST.finditer(text)]


LABELLED = re.compile(r"(?<![\w-])([IFXC]\d+)[.:] (?:(?:CRITICAL|WARNING|INFO): )?(\S+(?: \S+){0,2})")


def labels_used_twice(text: str, _: Vocabulary) -> list[str]:
    """A label (I1, F1) names one item in a document: a report of several nodes once called two incidents "I1", one on
    each node, and "findings F1" could not say which."""
    items: dict[str, set[str]] = {}
    for label, opening in LABELLED.findall(text):
        items.setdefault(label, set()).add(opening)
    return [f"{label}: {' / '.join(sorted(o))}" for label, o in sorted(items.items()) if len(o) > 1]


def plural_placeholders(text: str, _: Vocabulary) -> list[str]:
    """A count says its noun in the singular or the plural it takes: "1 run(s)", "2 note(s)" leave the reader to choose
    (a unit in brackets after a space, "usual checkpoint (s)", is a label's unit, not a placeholder)."""
    return re.findall(r"[^\s(]*\w\(s\)", text)


@dataclass(frozen=True)
class Rule:
    name: str
    why: str
    breaches: Callable[[str, Vocabulary], list[str]]


RULES = (
    Rule("times carry their zone", "a bare 03:04:55 is read in the reader's own zone, or the log's", times_without_zone),
    Rule("no detector kinds", "a reader forwards the sentence to a customer", detector_kinds),
    Rule("no evidence keys", "field names are the JSON's, not a sentence's", evidence_keys),
    Rule("no function names", "the reader does not read the code", function_names),
    Rule("milliseconds keep their precision", "a mean of 0.33 ms read `0 ms` beside its usual 0.3 ms", milliseconds_rounded_away),
    Rule("no source tags", "`ftdc+log` is the data's tag, not a sentence's", source_tags),
    Rule("shares are percentages", "`time share 0.425` beside the prose's 42 % is two values", shares_as_fractions),
    Rule("labels claim no baseline", "the baseline's line says what it rests on", hour_claimed_by_a_label),
    Rule("RAM in one unit", "MB in one place and GB in another is one quantity said twice", ram_in_megabytes),
    Rule("names as their records give them", "str.capitalize lowers an acronym", names_lowered),
    Rule("plans, shapes and clients say why there is none", "an empty cell or code span says nothing", blank_plans_and_shapes),
    Rule("no internal items in an evidence list", "`finding: F1` and a threshold dump are no fact of the cause", internal_items),
    Rule("each label once in an evidence list", "`checkpoints: 30` beside `count 30` is one fact said twice", labels_said_twice),
    Rule("nested values read as sentences", "a record's field labels run together are no sentence", nested_records_garbled),
    Rule("sources in words", "`log 22315` and `mongod.log:3` are the code's tags", sources_as_ids),
    Rule("nothing is no table", "`the 0 with the most` above an empty table says nothing twice", nothing_counted_as_a_table),
    Rule("no placeholder for an absent value", "`query hash: -` is an item with nothing to say", placeholders_for_absent_values),
    Rule("whole seconds in windows", "`03:00:30.005 – 03:29:55.005` for a 29 min window", milliseconds_in_long_windows),
    Rule("a window said once", "a range given twice on one line reads as two", windows_said_twice),
    Rule("RAM with its decimal", "`31 GB of RAM` beside `31.2 GB RAM`", ram_in_whole_gigabytes),
    Rule("times counted, not listed", "a loop's 282 restarts each printed", times_listed),
    Rule("one item per label", "a cross-reference must point at one item", labels_used_twice),
    Rule("no parentheses in parentheses", "`60 s (mongod default (syncdelay))` is read back to front", nested_parentheses),
    Rule("counts in their number", "`1 run(s)` leaves the reader to choose singular or plural", plural_placeholders),
)


# --- every format's text ---------------------------------------------------------------------------------------------

# The JSON's fields that are sentences (the rest is data: ISO times, kinds, keys).
PROSE = {"headlines", "title", "subject", "statement", "explanation", "reasoning", "notes", "summary", "headline", "text"}
PROSE |= {"why", "has", "change", "reason", "method", "cause"}


def _prose(value, key: str | None = None) -> Iterator[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _prose(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _prose(v, key)
    elif isinstance(value, str) and key in PROSE:
        yield value


def _markdown_text(text: str) -> str:
    """Markdown as it reads: backslash escapes undone, image targets (file names) dropped, and the log's own lines
    (fenced blocks: the slowest runs as mongod wrote them) left out, as they are the log's words, not the report's."""
    text = re.sub(r"(?ms)^( *)(`{3,})\n.*?\n\1\2$", " ", text)
    return re.sub(r"\]\([^)]*\)", "]", re.sub(r"\\([\\`*_\[\]<>&|#!~])", r"\1", text))


def _html_text(page: str) -> str:
    """The page's text as a browser shows it: no script, style or figure (the figures are checked on their own)."""
    page = re.sub(r"(?is)<(script|style|svg)\b.*?</\1>", " ", page)
    page = re.sub(r"(?is)<pre class=logline>.*?</pre>", " ", page)  # the log's own lines: its words, not the report's
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


# Wide enough that no table cell wraps: a time and its zone wrapped onto a cell's next line are one phrase to a reader,
# and the rules read lines.
TERMINAL_WIDTH = 400


def _terminal(nodes) -> str:
    with open("/dev/null", "w") as sink:
        console = Console(record=True, width=TERMINAL_WIDTH, file=sink)
        for node in nodes:
            console.print(
                render_overview(node.overview, TERMINAL_WIDTH),
                render_incidents(node.result, TERMINAL_WIDTH),
                render_findings(node.result, TERMINAL_WIDTH),
            )
        return console.export_text()


def rendered(result: NodesAnalysis, folder: Path) -> dict[str, str]:
    """Format -> the text a reader gets."""
    report = build_report(result)
    out = {"terminal": _terminal(result.nodes)}
    for fmt in (".md", ".html", ".json"):
        write_report(report, folder / f"report{fmt}")
    out["markdown"] = _markdown_text((folder / "report.md").read_text())
    out["html"] = _html_text((folder / "report.html").read_text())
    out["json"] = "\n".join(_prose(json.loads((folder / "report.json").read_text())))
    return out


# --- the cases -------------------------------------------------------------------------------------------------------


# Family draws with a log written away from UTC: a time is given in the log's offset too.
DRAWS = {
    "checkpoint-stall-7.0-log-at-minus-3h": (
        Shape(layout="7.0", tz_minutes=-180, seed=39),
        Incident("checkpoint_stall", 900, steady=True),
    ),
    "cache-fill-4.2-log-at-plus-5h30": (
        Shape(layout="4.2", tz_minutes=330, seed=40),
        Incident("cache_pressure", 900, variant="fill", culprit=True),
    ),
    "read-tickets-8.0-log-at-plus-1h": (
        Shape(layout="8.0", tz_minutes=60, seed=41),
        Incident("ticket_exhaustion", 600, variant="read", culprit=True),
    ),
    # Clients reconnecting, their metadata logged: the connections table has rows.
    "connection-storm-7.0": (Shape(layout="7.0", seed=42), Incident("connection_storm", 120, warm_up=True)),
}
# The real samples: a directory each, and 8.0's one file.
REAL = {
    "mongod-4.2.1": "mongod-4.2.1/diagnostic.data",
    "mongod-7.0": "mongod-7.0/diagnostic.data",
    "mongod-8.0-chunk": "mongod-8.0-chunk/metric-2025-03-12_15-58-06.0_+00-00-00.bson",
}
CASES = [
    *(f"scenario:{name}" for name in SCENARIO_NAMES),
    *(f"real:{name}" for name in REAL),
    *(f"draw:{name}" for name in DRAWS),
]


def _analyses(case: str, request):
    kind, name = case.split(":", 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "scenario":
            return analyzed_result(name)
        if kind == "real":
            return NodesAnalysis([analysis.analyze(request.getfixturevalue("ftdc_samples") / REAL[name])])
        return NodesAnalysis([analyzed(build, *DRAWS[name])[1]])


@pytest.fixture(scope="module", params=CASES)
def case(request, tmp_path_factory):
    result = _analyses(request.param, request)
    folder = tmp_path_factory.mktemp("lint")
    texts = rendered(result, folder)
    return request.param, result.nodes, texts, Vocabulary.of(result.nodes), json.loads((folder / "report.json").read_text())


def test_the_json_document_is_the_shape_declared(case):
    """`analysis.outputs.shape`: no key added, dropped or retyped, times in UTC with their Z."""
    name, *_, document = case
    try:
        shape.check(document)
    except msgspec.ValidationError as e:
        pytest.fail(f"{name}: {e}")


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_every_format_keeps_every_rule(case, rule):
    name, _, texts, vocabulary, _ = case
    broken = {fmt: found for fmt, text in texts.items() if (found := rule.breaches(text, vocabulary))}
    assert broken == {}, f"{name}: {rule.name} ({rule.why})"


# --- the rules find what they look for -------------------------------------------------------------------------------

VOCABULARY = Vocabulary(
    frozenset({"checkpoint_stall", "restart"}),
    frozenset({"writes_per_s", "carried_by"}),
    frozenset({"summarize_queries"}),
    frozenset({"eviction_dirty_target"}),
)


@pytest.mark.parametrize(
    ("text", "rule", "found"),
    [
        ("the median of the hour before 03:00:30.", times_without_zone, 1),
        ("at 03:00:30 UTC, 00:00:30 in the log's -03:00", times_without_zone, 0),
        ("2024-06-03 03:00:30 – 03:29:55 UTC (29 min)", times_without_zone, 0),
        ("2024-06-03T03:00:30.005Z – 2024-06-03T03:29:55Z", times_without_zone, 0),
        ("from 10:00:05 to 10:03:00, then", times_without_zone, 2),
        ("**checkpoint_stall**: how it decides", detector_kinds, 1),
        ("checkpoint stall; a restart at 03:00 UTC", detector_kinds, 0),
        ("- writes_per_s: 801; carried_by: [...]", evidence_keys, 2),
        ("eviction_dirty_target 5 % → 2 %", evidence_keys, 0),
        ("Counts and percentiles are summarize_queries'", function_names, 1),
        ("Mean write latency reached 0 ms. Usual write latency: 0.3 ms", milliseconds_rounded_away, 1),
        ("reached 0.33 ms, 10 ms, 1,250 ms, 2.0 ms", milliseconds_rounded_away, 0),
        ("(the longest from 03:40:30 UTC, ftdc+log)", source_tags, 1),
        ("(the longest from 03:40:30 UTC, seen in both FTDC and the log)", source_tags, 0),
        ("runs 90, share 1, application x; time share 0.425; checkpoint time share: 0.425", shares_as_fractions, 3),
        ("share of the slow operations' time 100 %; share of the window 42 %", shares_as_fractions, 0),
        ("- writes per second in the hour before: 800", hour_claimed_by_a_label, 1),
        ("- writes per second before: 800", hour_claimed_by_a_label, 0),
        ("Ubuntu, 8 cores, 32,000 MB RAM", ram_in_megabytes, 1),
        ("8.0 GB of 31.2 GB RAM", ram_in_megabytes, 0),
        ("Ttl deletion burst · 2024-04-15", names_lowered, 1),
        ("TTL deletion burst · 2024-04-15", names_lowered, 0),
        ("| ns | command | plan | shape |\n|---|---|---|---|\n| a.b | insert |  | `  ` |\n", blank_plans_and_shapes, 2),
        ("| ns | plan | clients | shape |\n|---|---|---|---|\n| a.b | IXSCAN | | `{}` |\n", blank_plans_and_shapes, 1),
        (
            "| ns | plan | clients | shape |\n|---|---|---|---|\n| a.b | IXSCAN | not named in the log | `{}` |\n",
            blank_plans_and_shapes,
            0,
        ),
        (
            "| ns | plan | shape |\n|---|---|---|\n| a.b | none: an insert has no plan | none: an insert has no filter |\n",
            blank_plans_and_shapes,
            0,
        ),
        (
            '| ns | plan | shape |\n|---|---|---|\n| a.b | IXSCAN { a: 1 } | ` {"filter":{"a":1}} ` |\n| | |\n',
            blank_plans_and_shapes,
            0,
        ),
        ("\n- finding: F1\n- data handles at their peak: 61,996\n- thresholds: lock wait threads 0.1\n", internal_items, 2),
        ("\n- data handles at their peak: 61,996\n- finding F1 is below\n", internal_items, 0),
        (
            "**Root cause (x)**: y\n\n- checkpoints: 30\n- share: 42 %\n- checkpoints: 30\n\n- checkpoints: 2\n",
            labels_said_twice,
            1,
        ),
        ("**Root cause (x)**: y\n\n- checkpoints: 30\n- checkpoints in the window: 30 in 03:00 UTC\n", labels_said_twice, 0),
        ("- No FTDC samples for 0.4 s: 10:00 UTC\n- No FTDC samples for 0.4 s: 11:00 UTC\n", labels_said_twice, 0),
        (
            "count 30, checkpoints the usual is the median of 59, the usual rests on checkpoints since 02:00",
            nested_records_garbled,
            2,
        ),
        ("up to 25 s against a usual 1.9 s (the median of the 59 in the hour before 03:00:30 UTC)", nested_records_garbled, 0),
        ("now 4 (log 22315 Opening WiredTiger (mongod.log:3): eviction.threads_max=4)", sources_as_ids, 2),
        ('now 4 (eviction.threads_max=4, from the log\'s "Opening WiredTiger" line, mongod.log line 3)', sources_as_ids, 0),
        ("0 query shape(s) in the log; the 0 with the most total time", nothing_counted_as_a_table, 1),
        ("| `` |", nothing_counted_as_a_table, 1),
        ("No slow operations were logged.\n```\ncode\n```", nothing_counted_as_a_table, 0),
        ("- shape: {}\n- query hash: -\n- held: 3", placeholders_for_absent_values, 1),
        ("| a | - |\n- count: 0", placeholders_for_absent_values, 0),
        ("2024-06-03 03:00:30.005 – 03:29:55.005 UTC (29 min 25 s)", milliseconds_in_long_windows, 1),
        ("2025-07-10 19:20:56.000 – 19:20:56.600 UTC", milliseconds_in_long_windows, 0),
        (
            "restarted between 2024-05-30 22:36:59 and 22:40:00 UTC, down 3 min: 2024-05-30 22:36:59 – 22:40:00 UTC",
            windows_said_twice,
            1,
        ),
        ("mongod restarted, down for at most 3 min 1 s: 2024-05-30 22:36:59 – 22:40:00 UTC", windows_said_twice, 0),
        ("the host has 31 GB of RAM", ram_in_whole_gigabytes, 1),
        ("the host has 31.2 GB of RAM; 8.0 GB of 31.2 GB RAM", ram_in_whole_gigabytes, 0),
        ("restarted at: 2024-05-06 09:00:00 UTC; 2024-05-06 09:05:00 UTC; 2024-05-06 09:10:00 UTC", times_listed, 1),
        ("restarted at: 3, the first at 2024-05-06 09:00:00 UTC, the last at 2024-05-06 09:10:00 UTC", times_listed, 0),
        ("### CRITICAL: a:1 I1. COLLSCAN aggregate on x\n### WARNING: c:1 I1. Disk sda saturated", labels_used_twice, 1),
        (
            "### CRITICAL: a:1 I1. COLLSCAN aggregate on x\n![a:1 I1: COLLSCAN aggregate on x] (F1; 07:29 UTC)",
            labels_used_twice,
            0,
        ),
        ("#### F1. CRITICAL: Cache past its trigger\n  • Cache past its trigger [F1]\nF1. Cache past its", labels_used_twice, 0),
        ("ran past the 60 s (mongod default (storage.syncPeriodSecs / syncdelay)) checkpoint interval", nested_parentheses, 1),
        ("now not set (not set (128 before 7.0; 7.0+ sizes it by throughput probing))", nested_parentheses, 1),
        (
            "ran past the 60 s (mongod's default for storage.syncPeriodSecs / syncdelay) interval; eviction threads_max 4 → 8 "
            '(wiredTigerEngineRuntimeConfig: "eviction=(threads_max=8)"); createIndex({ status: 1 }); ![I1](i1.svg) (F1)',
            nested_parentheses,
            0,
        ),
        ("1 run(s), 2 note(s) below; 7 checkpoint(s)", plural_placeholders, 3),
        ("1 run, 2 notes below; usual checkpoint (s): 4; 1 note on context is below", plural_placeholders, 0),
    ],
)
def test_each_rule_finds_its_breaches(text, rule, found):
    assert len(rule(text, VOCABULARY)) == found


def test_every_detector_names_each_of_its_kinds_in_words():
    # Kinds were shown as they are in code ("`checkpoint_stall`", "**replication_lag, primary_change**" in Methods):
    # each record names them for the reports.
    for module in MODULES:
        record = module.DETECTOR
        assert len(record.names) == len(record.kinds), module.__name__
        assert all(name and "_" not in name for name in record.names), module.__name__
    assert set(NAMES) == set(RECORDS)


def test_evidence_is_shown_in_words():
    # The Markdown listed `writes_per_s: 801`, `carried_by: [{"ns": ...}]`; the HTML dumped the evidence as JSON.
    assert words.label("writes_per_s") == "writes per second"
    assert words.label("checkpoint_longest_s") == "checkpoint longest (s)"
    assert "_" not in words.label("held_s") + words.label("query_hash") + words.label("carried_by")
    carried = [{"ns": "shop.orders", "command": "update", "runs": 90, "share": 0.999}]
    assert words.said(carried) == "(namespace shop.orders, command update, runs 90, share of the slow operations' time 100 %)"
    assert words.said(dt.datetime(2024, 6, 3, 3, 0, 30, tzinfo=UTC), dt.timedelta(hours=-3)) == (
        "2024-06-03 03:00:30 UTC, 00:00:30 in the log's -03:00"
    )


# --- regression tests of what the lint found -------------------------------------------------------------------------


def test_the_log_offset_is_read_and_every_format_gives_times_in_it_beside_utc(tmp_path):
    # Times were ISO `...Z` in the windows and bare `03:04:55` in the sentences; the log, written at -03:00, gave the
    # customer's own times, which the report never did (issue 39 §5).
    _, node = analyzed(build, *DRAWS["checkpoint-stall-7.0-log-at-minus-3h"])
    assert node.logs.utc_offset == dt.timedelta(hours=-3)
    incident = node.incidents[0]
    utc, local = incident.start.strftime("%H:%M:%S"), (incident.start - dt.timedelta(hours=3)).strftime("%H:%M:%S")
    texts = rendered(NodesAnalysis([node]), tmp_path)
    for fmt in ("terminal", "markdown", "html", "json"):
        assert f"{utc}" in texts[fmt] and " UTC" in texts[fmt], fmt
    for fmt in ("terminal", "markdown", "html", "json"):  # the incident's window: the headline, the card, its details
        assert re.search(rf"{local}(?:\.\d+)? – [\d:.]+ in the log's -03:00", texts[fmt]), fmt


def test_the_causes_considered_reach_every_format(tmp_path):
    # The candidates weighed for a root cause were only in the JSON; the terminal and the Markdown told the root cause
    # alone (issue 39 §5: every format tells the same story).
    # (A bulk loader under a checkpoint interval set long: the setting is weighed beside the load that rose. The scenarios'
    # only candidate, cache-fill-collscan's eviction behind a steady load, was one its dirty data did not support.)
    from samples.families import Incident, Shape, analyzed, build

    shape = Shape(
        layout="6.0",
        cache_gb=2.0,
        baseline_ms=1.5,
        period_s=10,
        checkpoint_interval=300,
        eviction_trigger=86,
        dirty_trigger=21,
        seed=437,
    )
    _, node = analyzed(build, shape, Incident("checkpoint_stall", 350, 69.7, "long", 0.0, bulk_loader=True))
    incident = next(i for i in node.incidents if i.candidates)
    texts = rendered(NodesAnalysis([node]), tmp_path)
    for candidate in incident.candidates:
        sentence = f"{words.cause_kind(candidate)}: {candidate.summary}"
        for fmt in ("markdown", "html"):
            assert sentence in " ".join(texts[fmt].split()), fmt
        assert " ".join(sentence.split()[:6]) in " ".join(texts["terminal"].split()), "terminal"
    heading = "Contributing" if incident.candidates[0].kind == "configuration" else "Also considered"
    assert all(heading in texts[fmt] for fmt in ("terminal", "markdown", "html"))


# --- the declared shape finds what differs --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_document() -> dict:
    return json.loads(json.dumps(build_report(analyzed_result("demo")).to_dict()))


def _edited(document: dict, path: tuple, value) -> dict:
    out = json.loads(json.dumps(document))
    parent = out
    for key in path[:-1]:
        parent = parent[key]
    if value is KeyError:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return out


@pytest.mark.parametrize(
    "path, value",
    [
        (("nodes", 0, "findings", 0, "severity_level"), 2),  # a key added
        (("nodes", 0, "findings", 0, "title"), KeyError),  # a key dropped
        (("nodes", 0, "findings", 0, "start"), "2024-05-14 09:50:00"),  # a time with no zone
        (("nodes", 0, "incidents", 0, "recommendations", 0, "proposed"), "80"),  # a number as text
        (("nodes", 0, "summary", "samples"), 1.5),  # a count not whole
    ],
    ids=["added", "dropped", "time-without-zone", "number-as-text", "count-not-whole"],
)
def test_the_declared_shape_refuses_what_differs(demo_document, path, value):
    shape.check(demo_document)
    with pytest.raises(msgspec.ValidationError):
        shape.check(_edited(demo_document, path, value))


def test_the_published_schema_is_the_declared_shape():
    """docs/report-schema.json, for a consumer's validator: `python -m analysis.outputs.shape > docs/report-schema.json`."""
    published = json.loads((Path(__file__).resolve().parents[1] / "docs" / "report-schema.json").read_text())
    assert published == shape.schema()


def test_the_shapes_descriptions_are_one_line_each():
    """msgspec versions differ in how a docstring's continuation lines reach the schema: one line each keeps the
    published schema the same under every version the dependency range allows."""
    import inspect

    structs = [v for v in vars(shape).values() if inspect.isclass(v) and issubclass(v, shape._Shape) and v.__doc__]
    assert structs and [s.__name__ for s in structs if "\n" in s.__doc__.strip()] == []
