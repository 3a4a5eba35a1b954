"""mongod logs (JSON 4.4+ and legacy text 2.2-4.2) as polars frames.

The public names are imported when first used (`ftdc.lazy`): the CLI names
`LogWarning` to catch it, which must not load the readers and Arrow."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

_EXPORTS = {
    "LogFrames": "frames",
    "read_logs": "reader",
    "LogWarning": "sources",
    "NotALog": "sources",
    "SourceError": "sources",
    "summarize_queries": "summary",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .frames import LogFrames
    from .reader import read_logs
    from .sources import LogWarning, NotALog, SourceError
    from .summary import summarize_queries
