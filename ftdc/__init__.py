"""ftdc-analyze: MongoDB FTDC files and mongod logs as polars frames.

Pipeline: `paths` (which files) -> native `catalog`/`read` (documents,
chunks, int64 columns) -> `frames` (polars) -> `reader`/`scan`/`export`/
`metadata` (the public readers).

The public names are imported when first used (`lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_exports

# Public name -> the module that defines it.
_EXPORTS = {
    "list_metrics": "catalog",
    "read_catalog": "catalog",
    "to_dataset": "dataset",
    "FTDCError": "errors",
    "FTDCWarning": "errors",
    "Problem": "errors",
    "ProblemKind": "errors",
    "to_csv": "export",
    "to_parquet": "export",
    "LogFrames": "logs",
    "LogWarning": "logs",
    "NotALog": "logs",
    "read_logs": "logs",
    "summarize_queries": "logs",
    "Metadata": "metadata",
    "NodeInfo": "metadata",
    "read_metadata": "metadata",
    "read_ftdc": "reader",
    "scan_ftdc": "scan",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .catalog import list_metrics, read_catalog
    from .dataset import to_dataset
    from .errors import FTDCError, FTDCWarning, Problem, ProblemKind
    from .export import to_csv, to_parquet
    from .logs import LogFrames, LogWarning, NotALog, read_logs, summarize_queries
    from .metadata import Metadata, NodeInfo, read_metadata
    from .reader import read_ftdc
    from .scan import scan_ftdc
