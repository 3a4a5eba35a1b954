"""mongod logs (JSON 4.4+ and legacy text 2.2-4.2) as polars frames."""

from .frames import LogFrames
from .reader import read_logs
from .sources import LogWarning, NotALog, SourceError
from .summary import summarize_queries

__all__ = ["LogFrames", "LogWarning", "NotALog", "SourceError", "read_logs", "summarize_queries"]
