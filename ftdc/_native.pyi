"""Types of the Rust core (native/src/python*.rs), for mypy and editors.

Kept by hand beside the bindings: tests/test_native_stub.py checks that every name the
module exports is declared here and nothing more.
"""

from typing import Any, Final, Protocol, TypedDict

# A log column's buffers: (name, kind, validity address or None, values address (string
# views for strings), [(data buffer address, length)...] of a string column); kind is
# one of the COLUMN_* codes.
ColumnBuffers = tuple[str, int, int | None, int, list[tuple[int, int]]]

COLUMN_INT64: Final[int]
COLUMN_BOOL: Final[int]
COLUMN_STRING_VIEW: Final[int]
MAX_LISTED_PROBLEMS: Final[int]

class ArrowArray(Protocol):
    """An Arrow array by the PyCapsule interface (a pyarrow.Array is one)."""

    def __arrow_c_array__(self, requested_schema: Any = None, /) -> tuple[Any, Any]: ...

class DecodedFrame:
    """Columns decoded by `read`, owned here and handed to pyarrow by address."""

    @property
    def rows(self) -> int: ...
    # (file, offset or None for the whole file, kind, message): ftdc.errors.Problem
    @property
    def problems(self) -> list[tuple[str, int | None, str, str]]: ...
    @property
    def documents(self) -> int: ...
    @property
    def error(self) -> str | None: ...
    @property
    def chunks_without_time(self) -> int: ...
    def catalog(self) -> CatalogDict | None: ...
    def time(self) -> FrameColumn: ...
    def columns(self) -> list[tuple[str, int, FrameColumn]]: ...

class FrameColumn:
    """A column of a decoded frame as an Arrow array (`pyarrow.array(column)`), its buffers the decoder's."""

    def __arrow_c_array__(self, requested_schema: Any = None) -> tuple[Any, Any]: ...

class CatalogDict(TypedDict):
    # (file, offset, type, _id in ms, count, the document's BSON or None)
    documents: list[tuple[str, int, int, int | None, int | None, bytes | None]]
    # (file, offset, _id in ms, samples, metrics, layout index, first, last)
    chunks: list[tuple[str, int, int | None, int, int, int, int | None, int | None]]
    # (metric names, their kinds) per distinct layout
    layouts: list[tuple[list[str], bytes]]
    problems: list[tuple[str, int | None, str, str]]

def read(
    paths: list[str],
    interim: list[bool],
    metrics: list[str] | None = None,
    start: int | None = None,
    end: int | None = None,
    time_field: str = "start",
    max_values: int | None = None,
    catalog: bool = False,
) -> DecodedFrame: ...
def catalog(paths: list[str], interim: list[bool], time_field: str = "start") -> CatalogDict: ...
def select_names(patterns: list[str], names: list[str]) -> list[str]: ...
def counters() -> tuple[int, int]: ...

# The columns' chunks: Int64 or Float64 Arrow arrays (any object with `__arrow_c_array__`), read where they lie.
def rolling_quantiles(
    times: list[ArrowArray],
    columns: list[list[ArrowArray]],
    window: int,
    quantiles: list[tuple[float, str]],
    spike_rule: tuple[float, float, float, int] | None = None,
) -> list[tuple[bytes, list[bytes], list[float]]]: ...
def run_extremes(columns: list[list[ArrowArray]], rows: int, starts: bytes) -> tuple[bytes, bytes]: ...

class ChunkEncoder:
    def __init__(self, reference: bytes) -> None: ...
    @property
    def metric_count(self) -> int: ...
    @property
    def delta_count(self) -> int: ...
    def push(self, sample: bytes) -> bool: ...
    def payload(self) -> bytes: ...

def schema_matches(reference: bytes, sample: bytes) -> bool: ...
def decode_chunk(data: bytes) -> tuple[bytes, int, int, bytes]: ...
def fill_reference(reference: bytes, values: bytes) -> bytes: ...

class LogBlock:
    def slow_ops(self) -> list[tuple[int, list[ColumnBuffers]]]: ...
    @property
    def json_lines(self) -> list[tuple[int, int, int]]: ...
    @property
    def years(self) -> tuple[int | None, int] | None: ...
    def events(self) -> list[tuple[int, list[ColumnBuffers]]]: ...
    @property
    def lines(self) -> int: ...
    @property
    def problems(self) -> list[tuple[int, str, str]]: ...
    @property
    def unlisted(self) -> int: ...

def decode_log_block(data: bytes, end: int, first_line: int, attr_ids: list[int]) -> LogBlock: ...
def decode_text_log_block(
    data: bytes, end: int, first_line: int, year_hint: int, years: tuple[int | None, int] | None = None
) -> LogBlock: ...
