"""The detector record is the contract: a module under analysis/findings/detectors/ that is not
registered never runs, and a kind without its record draws nothing and links to nothing,
silently. These checks make each omission a failure that names it."""

import ast
import importlib
import pkgutil
from pathlib import Path

import analysis.findings.detectors as detectors
from analysis.findings.detectors.record import Detector
from analysis.series.derived import COLUMNS

ROOT = Path(__file__).resolve().parents[1]
NOT_DETECTORS = {"record"}  # the record's own module
KINDS = set(detectors.RECORDS)


def _modules():
    for info in pkgutil.iter_modules(detectors.__path__):
        if info.name not in NOT_DETECTORS:
            yield importlib.import_module(f"analysis.findings.detectors.{info.name}")


def test_every_module_under_detectors_is_registered_with_its_record():
    for module in _modules():
        assert module in detectors.MODULES, f"{module.__name__} is not in analysis.detectors.MODULES: it would never run"
        assert isinstance(getattr(module, "DETECTOR", None), Detector), f"{module.__name__} declares no DETECTOR record"
        assert module.detect in detectors.DETECTORS


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
        assert emitted <= set(module.DETECTOR.kinds), f"{module.__name__} emits {sorted(emitted - set(module.DETECTOR.kinds))} without a record"


def test_what_records_name_exists():
    names = {c.name for c in COLUMNS}
    series_source = (ROOT / "analysis" / "series.py").read_text()
    for kind, record in detectors.RECORDS.items():
        assert set(record.causes) <= KINDS, (kind, sorted(set(record.causes) - KINDS))
        assert record.method.strip(), f"{kind}: no method text"
        for title, columns, _ in record.panels:
            for column in columns:
                if column.endswith("."):  # every device's or member's: built per device or member in series
                    assert f'f"{column}{{' in series_source, (kind, title, column)
                else:
                    assert column in names, (kind, title, column)


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
                assert set(values) <= KINDS, f"{path.relative_to(ROOT)}:{line} {name} names unknown kinds {sorted(set(values) - KINDS)}"
