"""Package attributes imported when first used (PEP 562), so that a command
needing none of them (`ftdc-analyze --version`, `--help`) starts without
polars, pyarrow, matplotlib or the native decoder."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`: `exports` maps each public name to the
    submodule defining it; any other name is tried as a submodule (`ftdc.logs`)."""
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        if name in exports:
            value = getattr(importlib.import_module(f".{exports[name]}", package), name)
        else:
            try:
                value = importlib.import_module(f".{name}", package)
            except ModuleNotFoundError as e:
                if e.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
