"""The query shapes the log reader gives commands, each written as a slow-query line of a JSON log
(the one way shapes are made: as the native decoder reads a line)."""

import json
import tempfile
from pathlib import Path

from ftdc.logs.reader import read_logs


def slow_query_line(command: dict, second: int = 0) -> str:
    return json.dumps(
        {
            "t": {"$date": f"2024-06-03T00:00:{second % 60:02d}.005-03:00"},
            "s": "I",
            "c": "COMMAND",
            "id": 51803,
            "ctx": "conn1",
            "msg": "Slow query",
            "attr": {"type": "command", "ns": "shop.events", "command": command, "durationMillis": 150},
        }
    )


def shapes_of(*commands: dict) -> list[str | None]:
    """Each command's shape, in order."""
    with tempfile.TemporaryDirectory() as place:
        log = Path(place) / "mongod.log"
        log.write_text("".join(slow_query_line(c, n) + "\n" for n, c in enumerate(commands)))
        return read_logs(log, workers=1).slow_ops["shape"].to_list()
