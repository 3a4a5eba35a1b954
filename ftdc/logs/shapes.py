"""Query shapes: a command's filter, sort and projection with the values replaced.

Two operations that differ only in their literal values get the same shape, as
mtools' `json2pattern` and hatchet group them. The rules live in one place, the
native decoder (native/src/logs/shape.rs), which shapes JSON log lines as it
reads them; legacy text lines reach it through these functions.
"""

import orjson

from .. import _native


def shape_of_command_json(command_json: str | None, originating_json: str | None = None) -> str | None:
    """Shape of a command given as JSON text (and of the command a getMore
    continues); None when it has no query or is not JSON."""
    return _native.query_shape(command_json, originating_json)


def shape_of_command(command: dict) -> str | None:
    """Shape of a parsed command document (keys, nesting and literal texts)."""
    return _native.query_shape(orjson.dumps(command).decode())
