"""The detector record is the contract: a module under analysis/findings/detectors/ that is not
registered never runs, and a kind without its record draws nothing and links to nothing,
silently. These checks make each omission a failure that names it."""

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import analysis.findings.detectors as detectors
from analysis.findings.detectors.record import CANDIDATES, Detector
from analysis.series.derived import CACHE_PERCENTAGES, COLUMNS, columns_for
from analysis.series.metrics import CPU_STATES, resolve
from analysis.settings import SETTINGS

ROOT = Path(__file__).resolve().parents[1]
KINDS = set(detectors.RECORDS)
DERIVED = (ROOT / "analysis" / "series" / "derived.py").read_text()
# Every derived column a record may name: the declared ones, each cache threshold in %, the CPU's (made per node, from
# the states it records: here a node recording every state and mongod's own CPU time), and the per-device or per-member
# families ("disk_util_pct." stands for every device's).
EVERY_CPU_METRIC = [
    *(f"systemMetrics.cpu.{state}_ms" for state in CPU_STATES),
    "serverStatus.extra_info.user_time_us",
    "serverStatus.extra_info.system_time_us",
]
NAMES = (
    {c.name for c in COLUMNS}
    | {f"{name}_pct" for name in CACHE_PERCENTAGES}
    | {c.name for c in columns_for(resolve(EVERY_CPU_METRIC))}
)
FAMILIES = set(re.findall(r'Column\(\s*f"([a-z_]+\.)\{', DERIVED))  # \s*: however `ruff format` wraps the call


def _modules():
    for info in pkgutil.iter_modules(detectors.__path__):
        if info.name not in detectors.NOT_DETECTORS:
            yield importlib.import_module(f"analysis.findings.detectors.{info.name}")


def test_every_module_under_detectors_is_registered_with_its_record():
    for module in _modules():
        assert module in detectors.MODULES, f"{module.__name__} is not in analysis.findings.detectors.MODULES: it would never run"
        assert isinstance(getattr(module, "DETECTOR", None), Detector), f"{module.__name__} declares no DETECTOR record"
        assert module.detect in detectors.DETECTORS


def test_modules_run_in_their_records_order():
    orders = [m.DETECTOR.order for m in detectors.MODULES]
    assert orders == sorted(orders) and len(set(orders)) == len(orders), (
        "two detectors share an order: which runs first would be the folder's"
    )


def test_each_kind_has_one_record():
    kinds = [kind for m in detectors.MODULES for kind in m.DETECTOR.kinds]
    assert len(kinds) == len(set(kinds)), sorted(k for k in kinds if kinds.count(k) > 1)


def _kinds_set(module) -> set[str]:
    """The kinds a module's findings can carry: every `kind=` it passes, resolved."""
    tree = ast.parse(Path(module.__file__).read_text())
    found = set()
    for node in ast.walk(tree):
        for keyword in getattr(node, "keywords", ()):
            if keyword.arg != "kind":
                continue
            value = keyword.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.add(value.value)
            elif isinstance(value, ast.Name) and isinstance(getattr(module, value.id, None), str):
                found.add(getattr(module, value.id))
            else:
                raise AssertionError(f"{module.__name__}:{node.lineno}: kind= is not a name the test can resolve")
    return found


def test_every_kind_a_finding_can_carry_has_its_record():
    for module in _modules():
        emitted = _kinds_set(module)
        assert emitted, f"{module.__name__} emits no finding kind"
        assert emitted <= set(module.DETECTOR.kinds), (
            f"{module.__name__} emits {sorted(emitted - set(module.DETECTOR.kinds))} without a record"
        )


def _column_exists(column: str) -> bool:
    return column in FAMILIES if column.endswith(".") else column in NAMES


def test_what_records_name_exists():
    for kind, record in detectors.RECORDS.items():
        assert set(record.sets_off) <= KINDS, (kind, sorted(set(record.sets_off) - KINDS))
        assert record.method.strip(), f"{kind}: no method text"
        assert set(record.explained_by) <= set(CANDIDATES), (kind, record.explained_by)
        assert set(record.settings) <= set(SETTINGS), (kind, sorted(set(record.settings) - set(SETTINGS)))
        for column in record.reads:
            assert _column_exists(column), (kind, "reads", column)
        for title, columns, _ in record.panels:
            for column in columns:
                assert _column_exists(column), (kind, title, column)


@pytest.mark.parametrize(
    "record",
    [
        Detector(kinds=("x",), order=1, method="m", reads=("no_such_column",)),
        Detector(kinds=("x",), order=1, method="m", sets_off=("no_such_kind",)),
        Detector(kinds=("x",), order=1, method="m", settings=("no_such_setting",)),
        Detector(kinds=("x",), order=1, method="m", panels=(("t", ("no_such_device_family.",), False),)),
    ],
)
def test_a_record_naming_what_does_not_exist_fails(record, monkeypatch):
    monkeypatch.setitem(detectors.RECORDS, "x", record)
    with pytest.raises(AssertionError):
        test_what_records_name_exists()


def test_a_record_naming_an_unknown_candidate_or_root_is_refused():
    with pytest.raises(ValueError, match="explained_by"):
        Detector(kinds=("x",), order=1, method="m", explained_by=("no_such_candidate",))
    with pytest.raises(ValueError, match="root"):
        Detector(kinds=("x",), order=1, method="m", root="no_such_root")
    with pytest.raises(ValueError, match="moments"):
        Detector(kinds=("x",), order=1, method="m", moments=("primary_change",))  # another detector's kind


def _columns_named(module) -> set[str]:
    """The derived columns `detect` and its helpers name: string constants and f-strings such as
    f"{rw}_tickets_available" (as every column ending so), outside the record itself."""
    named = set()
    for node in ast.parse(Path(module.__file__).read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "DETECTOR" for t in node.targets):
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and _column_exists(sub.value):
                named.add(sub.value)
            elif (
                isinstance(sub, ast.JoinedStr)
                and len(sub.values) == 2
                and isinstance(sub.values[1], ast.Constant)
                and str(sub.values[1].value).startswith("_")
            ):
                family = {n for n in NAMES if n.endswith(sub.values[1].value) and "_" not in n[: -len(sub.values[1].value)]}
                if family:
                    named.add(frozenset(family))
    return named


def test_every_derived_column_a_detector_reads_is_in_its_record():
    for module in _modules():
        reads = set(module.DETECTOR.reads)
        for column in _columns_named(module):
            if isinstance(column, frozenset):  # an f-string: one of the columns it can build is declared
                assert column & reads, f"{module.__name__} builds one of {sorted(column)} and its record's reads names none"
            else:
                assert column in reads, f"{module.__name__} reads {column} and its record's reads does not name it"


def test_a_detector_reads_the_spikes_exactly_when_its_record_says_so():
    """The spikes are still under way when the detectors start: one that reads them undeclared would hold a thread
    waiting while others could run (`detectors.detect` starts the declared ones last)."""
    for module in _modules():
        tree = ast.parse(Path(module.__file__).read_text())
        reads = any(isinstance(node, ast.Attribute) and node.attr == "spikes" for node in ast.walk(tree))
        assert reads == module.DETECTOR.reads_spikes, (
            f"{module.__name__}: reads the spikes {reads}, its record says {module.DETECTOR.reads_spikes}"
        )


def test_detectors_that_read_the_spikes_start_last_and_findings_keep_the_records_order(monkeypatch):
    started = []

    def recorder(module):
        def detect(ctx):
            started.append(module.__name__)
            return [module.__name__]

        return detect

    monkeypatch.setattr(detectors, "AT_ONCE", 1)  # one at a time: the order they start in is the order they run in
    monkeypatch.setattr(detectors, "DETECTORS", tuple(recorder(m) for m in detectors.MODULES))
    assert detectors.detect(None) == [m.__name__ for m in detectors.MODULES]
    spiky = [m.DETECTOR.reads_spikes for m in detectors.MODULES]
    assert any(spiky)
    assert started == [m.__name__ for m in detectors.MODULES if not m.DETECTOR.reads_spikes] + [
        m.__name__ for m in detectors.MODULES if m.DETECTOR.reads_spikes
    ]


def _string_lists(path: Path):
    """Module-level tuples, lists and sets of strings: (name, line, values)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, (ast.Tuple, ast.List, ast.Set)):
            values = [e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if values and len(values) == len(node.value.elts):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                yield ", ".join(ast.unparse(t) for t in targets), node.lineno, values


def test_kind_lists_outside_the_records_name_only_registered_kinds():
    """Lists of kinds kept elsewhere (root causes, configuration, culprits, report) break
    silently when a kind is renamed: a list naming two registered kinds or more must name
    only those (one alone may be a coincidence: `restart` is also a series flag)."""
    for path in sorted((ROOT / "analysis").rglob("*.py")):
        if path.parent.name == "detectors":
            continue
        for name, line, values in _string_lists(path):
            if len(set(values) & KINDS) >= 2:
                assert set(values) <= KINDS, (
                    f"{path.relative_to(ROOT)}:{line} {name} names unknown kinds {sorted(set(values) - KINDS)}"
                )


def _kinds_compared(path: Path) -> list[str]:
    """Where a module compares a `kind` with a registered kind's name (`f.kind == "primary_change"`,
    `kind in ("a", "b")`): line and kind, each."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        if not any(
            isinstance(o, ast.Attribute) and o.attr == "kind" or isinstance(o, ast.Name) and o.id == "kind" for o in operands
        ):
            continue
        for o in operands:
            for value in o.elts if isinstance(o, (ast.Tuple, ast.List, ast.Set)) else [o]:
                if isinstance(value, ast.Constant) and value.value in KINDS:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {value.value}")
    return found


def test_replica_set_findings_are_merged_and_drawn_by_their_records():
    """Merging members' copies (`analysis.nodes`, the fleet) and drawing them (the report) read what a kind is from
    its record (`replica_set_wide`, `peaks`, `moments`), never its name: a detector renamed or added there would
    otherwise be merged or drawn as another."""
    paths = [
        ROOT / "analysis" / "nodes.py",
        ROOT / "analysis" / "fleet.py",
        *sorted((ROOT / "analysis" / "outputs").rglob("*.py")),
    ]
    assert [f for path in paths for f in _kinds_compared(path)] == []
    assert detectors.MOMENTS == ("primary_change",) and detectors.REPLICA_SET_WIDE == ("replication_lag", "primary_change")
    assert detectors.RECORDS["replication_lag"].peaks == ("lag_s_peak",)
