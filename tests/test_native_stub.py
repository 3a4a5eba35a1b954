"""ftdc/_native.pyi, the types mypy and editors see for the Rust core, says what the built
module holds: the same names, the same parameters."""

import ast
import inspect
from pathlib import Path

from ftdc import _native

STUB = ast.parse((Path(__file__).resolve().parents[1] / "ftdc" / "_native.pyi").read_text())
STUB_ONLY = {"ArrowArray", "ColumnBuffers", "CatalogDict"}  # types that only describe values: nothing at run time


def _declared() -> dict[str, ast.AST]:
    names: dict[str, ast.AST] = {}
    for node in STUB.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, ast.Assign):
            names.update((t.id, node) for t in node.targets if isinstance(t, ast.Name))
    return names


def test_the_stub_declares_every_name_the_module_exports_and_no_other():
    exported = {name for name in dir(_native) if not name.startswith("_")}
    assert set(_declared()) - STUB_ONLY == exported


def _parameters(node: ast.FunctionDef) -> list[str]:
    return [a.arg for a in node.args.args if a.arg != "self"]


def test_functions_and_methods_take_the_parameters_the_module_takes():
    for name, node in _declared().items():
        if isinstance(node, ast.FunctionDef):
            assert _parameters(node) == list(inspect.signature(getattr(_native, name)).parameters), name
        elif isinstance(node, ast.ClassDef) and name not in STUB_ONLY:
            cls = getattr(_native, name)
            for item in node.body:
                if not isinstance(item, ast.FunctionDef):
                    continue
                runtime = getattr(cls, item.name)
                if any(isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list):
                    assert inspect.isgetsetdescriptor(runtime), (name, item.name)
                elif item.name == "__init__":
                    assert _parameters(item) == list(inspect.signature(cls).parameters), name
                else:
                    assert _parameters(item) == [p for p in inspect.signature(runtime).parameters if p != "self"], (
                        name,
                        item.name,
                    )


def test_decoded_columns_cross_as_arrow_arrays_that_keep_and_free_their_memory(tmp_path):
    """A frame's columns are the decoder's buffers, handed over by the PyCapsule interface: they stay readable once
    the decoded frame object is gone, and what they hold is freed when the last of them goes (no leak per read)."""
    import subprocess
    import sys

    code = (
        "import gc, sys, ftdc\n"
        "from ftdc import _native\n"
        "from ftdc.frames import to_polars\n"
        "rss = lambda: int(open('/proc/self/status').read().split('VmRSS:')[1].split()[0]) // 1024\n"
        "files = [str(p) for p in sorted(__import__('pathlib').Path(sys.argv[1]).glob('metrics.*'))]\n"
        "frame = to_polars(_native.read(files, [p.endswith('interim') for p in files]))\n"
        "gc.collect(); total = frame.select(frame.columns[1]).sum().item(); first = rss()\n"
        "for _ in range(40):\n"
        "    again = to_polars(_native.read(files, [p.endswith('interim') for p in files]))\n"
        "    assert again.select(again.columns[1]).sum().item() == total\n"
        "    del again; gc.collect()\n"
        "print(frame.height, rss() - first, frame.estimated_size() >> 20)\n"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code, str(root / "samples" / "diagnostic.data")], capture_output=True, text=True, cwd=root
    )
    assert out.returncode == 0, out.stderr
    rows, grown, size = map(int, out.stdout.split())
    assert rows > 0 and size > 0
    assert grown < 10 * size, (grown, size)  # 40 reads kept would hold 40 frames
