"""The packages' import graph has no cycle (issue 21 §6): a module can be read, tested and moved after
the modules it imports, never in a knot with them. Built from the source with `ast`, so an import only
a type checker runs (`if TYPE_CHECKING:`) or one inside a function counts as much as any other: each
still says that one module needs the other. A package's `__init__` making its submodules' names
available lazily (`ftdc.lazy`) imports nothing at load and is no edge."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("analysis", "ftdc")


def module_names() -> dict[str, Path]:
    """Every module of PACKAGES by dotted name (a package by its own name, for its `__init__`)."""
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
        # The native extension is a module of its own (`from . import _native` needs it, not the package).
        for path in (ROOT / package).rglob("*.so"):
            out[".".join((*path.relative_to(ROOT).parent.parts, path.name.split(".")[0]))] = path
    return out


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The dotted name an ImportFrom names, relative levels resolved against `module`."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of PACKAGES that `module` imports anywhere in its source."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, path, node)
            # `from package import submodule` needs the submodule; `from module import name` the module.
            out |= {f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source for alias in node.names}
    return {m for m in out if m in known and m != module}


def graph() -> dict[str, set[str]]:
    known = module_names()
    return {module: imports(module, path, known) for module, path in known.items() if path.suffix == ".py"}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_every_kind_of_import():
    edges = graph()
    # A module-level import, a relative one, one under `if TYPE_CHECKING:` and one inside a function.
    assert "ftdc.frames" in edges["analysis.observe"]
    assert "analysis.findings.finding" in edges["analysis"]  # under TYPE_CHECKING in analysis/__init__
    assert edges["ftdc"], "ftdc/__init__ imports what it exports at once"


@pytest.mark.parametrize(
    "edges, want",
    [
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": set(), "c": {"b"}}, []),
    ],
)
def test_cycles_finds_each_knot_once(edges, want):
    assert cycles(edges) == want


def test_no_import_cycle_in_analysis_or_ftdc():
    edges = graph()
    knots = cycles(edges)
    described = ["; ".join(f"{m} -> {', '.join(sorted(edges[m] & set(knot)))}" for m in knot) for knot in knots]
    assert not knots, "import cycles:\n" + "\n".join(described)


# --- the native core: its top-level modules (a file `src/x.rs` or a folder `src/x/`) ---

NATIVE = ROOT / "native" / "src"
_RUST_PATH = re.compile(r"\b(crate|super)::(\{[^}]*\}|\w+)")


def native_graph(src: Path = NATIVE) -> dict[str, set[str]]:
    """Which top-level modules of the crate each one names (`crate::x`, `super::x` from a top-level
    file, `crate::{x, y}`), outside comments and its `#[cfg(test)]` tests. A folder's files are one
    module: a parent and its children are read together in Rust, and a knot between two top-level
    modules is what makes the crate hard to follow."""
    top = {(p.parent.name if p.parent != src else p.stem) for p in src.rglob("*.rs")} - {"lib"}
    edges: dict[str, set[str]] = {name: set() for name in top}
    for path in src.rglob("*.rs"):
        module = path.parent.relative_to(src).parts[0] if path.parent != src else path.stem
        if module == "lib":
            continue
        text = re.sub(r"//.*", "", path.read_text()).split("#[cfg(test)]")[0]
        for base, named in _RUST_PATH.findall(text):
            if base == "super" and path.parent != src:
                continue  # a child naming its parent's items: the same module
            edges[module] |= ({w for w in re.findall(r"\w+", named)} & top) - {module}
    return edges


def test_the_native_graph_sees_each_kind_of_path():
    edges = native_graph()
    assert {"chunk", "file"} <= edges["catalog"] and "file" in edges["decode"]  # `use crate::x::...` from a folder too
    assert "logs" in edges["python_logs"]


def test_no_module_cycle_in_the_native_core():
    """docs/internals.md states this count (0)."""
    edges = native_graph()
    assert cycles(edges) == []


def test_the_decoder_and_the_numeric_kernels_do_not_use_each_other():
    edges = native_graph()
    decoder, kernels = {"decode", "catalog", "file", "chunk", "varint", "metrics", "reference"}, {"rolling", "extremes"}
    assert all(not edges[k] & decoder for k in kernels) and all(not edges[d] & kernels for d in decoder)


def test_a_native_knot_is_seen(tmp_path):
    (tmp_path / "a.rs").write_text("use crate::b::thing; // crate::c\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "mod.rs").write_text("mod inner;\nuse crate::{a, c};\n#[cfg(test)]\nmod tests { use crate::d; }\n")
    (tmp_path / "b" / "inner.rs").write_text("use super::x;\n")
    (tmp_path / "c.rs").write_text("")
    (tmp_path / "d.rs").write_text("")
    (tmp_path / "lib.rs").write_text("pub mod a;\n")
    assert native_graph(tmp_path) == {"a": {"b"}, "b": {"a", "c"}, "c": set(), "d": set()}
    assert cycles(native_graph(tmp_path)) == [["a", "b"]]


# The stages, lowest first (docs/internals.md "The layers"): a module imports its own layer and those below, never one
# above. The package `analysis` itself (its `__init__`, the public façade) stands above them all.
LAYERS = (
    ("ftdc",),  # files -> chunks -> frames; logs -> frames
    ("analysis.text", "analysis.settings", "analysis.display"),  # words, the settings' records, the Jupyter hook
    ("analysis.series",),  # frames -> series, the node's thresholds, checkpoints
    ("analysis.advice",),  # what a recommendation is (the vocabulary findings and incidents advise in)
    ("analysis.findings",),  # series -> findings: the detectors
    ("analysis.incidents",),  # findings -> incidents, root causes, the advice vetted
    ("analysis.workbench",),  # what a report shows beside the incidents (overview, the log's tables, the audit)
    ("analysis.observe", "analysis.members", "analysis.nodes", "analysis.demo"),  # one pass over one node, or several
    ("analysis.outputs",),  # the JSON document, tables, terminal, report, explorer
    ("analysis.fleet",),  # many nodes into a dataset
    ("analysis",),
)


def layer_of(module: str) -> int | None:
    """The index in LAYERS of the longest prefix naming `module`."""
    found = [(len(p), i) for i, prefixes in enumerate(LAYERS) for p in prefixes if module == p or module.startswith(p + ".")]
    return max(found)[1] if found else None


def upward_imports(edges: dict[str, set[str]]) -> list[str]:
    return [
        f"{m} -> {d}"
        for m, deps in sorted(edges.items())
        for d in sorted(deps)
        if (layer_of(m) is not None and layer_of(d) is not None and layer_of(d) > layer_of(m))
    ]


def test_every_module_has_its_layer():
    assert [m for m in graph() if layer_of(m) is None] == []


def test_no_module_imports_a_later_stage():
    """docs/internals.md states this count (0)."""
    assert upward_imports(graph()) == []


def test_an_upward_import_is_seen():
    assert upward_imports({"analysis.series.x": {"analysis.findings.y"}, "analysis.outputs.z": {"ftdc.a"}}) == [
        "analysis.series.x -> analysis.findings.y"
    ]
