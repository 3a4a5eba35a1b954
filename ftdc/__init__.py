"""ftdc-analyze: MongoDB FTDC files and mongod logs as polars frames.

Pipeline: `paths` (which files) -> native `catalog`/`read` (documents,
chunks, int64 columns) -> `frames` (polars) -> `reader`/`scan`/`export`/
`metadata` (the public readers).
"""

from .catalog import list_metrics, read_catalog
from .dataset import to_dataset
from .errors import FTDCError, FTDCWarning
from .export import to_csv, to_parquet
from .logs import LogFrames, LogWarning, NotALog, read_logs, summarize_queries
from .metadata import Metadata, NodeInfo, read_metadata
from .reader import read_ftdc
from .scan import scan_ftdc

__all__ = [
    "FTDCError",
    "FTDCWarning",
    "LogFrames",
    "LogWarning",
    "Metadata",
    "NodeInfo",
    "NotALog",
    "list_metrics",
    "read_catalog",
    "read_ftdc",
    "read_logs",
    "read_metadata",
    "scan_ftdc",
    "summarize_queries",
    "to_csv",
    "to_dataset",
    "to_parquet",
]
