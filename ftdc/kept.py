"""Every metric of a read kept as the bytes its delta walk found (`read_with_catalog(..., keep=True)`), reduced later
on a time axis without a frame: the explorer's one minimum and maximum per pixel column of each of a node's thousands
of metrics, from the analysis' own pass over the files, each chunk inflated once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .paths import FtdcFile

if TYPE_CHECKING:
    import numpy as np

    from . import _native

# A series on an axis as the explorer stores it: (low, high, levels), the levels little-endian uint16, each column's
# least then its greatest, 0 at `low`, 0xFFFE at `high`, 0xFFFF where the column holds no value (`_native.levels`).
Levels = tuple[float, float, bytes]


@dataclass(frozen=True)
class Kept:
    """What one read kept: of `files`, within [start_ms, end_ms] (None: unbounded). `dropped`: the read's rows its
    frame left out (damaged times), ascending; the rows of the frame are the others, in order."""

    values: _native.KeptValues
    files: tuple[FtdcFile, ...]
    start_ms: int | None
    end_ms: int | None
    dropped: tuple[int, ...]

    def covers(self, files: Sequence[FtdcFile], start_ms: int | None, end_ms: int | None) -> bool:
        """Whether this is what a read of `files` within [start_ms, end_ms] holds."""
        return (self.files, self.start_ms, self.end_ms) == (tuple(files), start_ms, end_ms)

    def kinds(self) -> dict[str, int]:
        """Each metric kept, and its kind (as the decoder's: 0 int64, 1 bool, 2 Date)."""
        return dict(self.values.names())

    def _per_read_row(self, values: np.ndarray, missing) -> np.ndarray:
        """`values` (one per row of the frame) as one per row of the read, `missing` at the rows the frame dropped."""
        import numpy as np  # only here: a read that keeps nothing needs no numpy

        if not self.dropped:
            return values
        out = np.full(self.values.rows, missing, dtype=values.dtype)
        out[np.setdiff1d(np.arange(self.values.rows), np.array(self.dropped), assume_unique=True)] = values
        return out

    def reduce(
        self,
        metrics: Sequence[tuple[str, bool | None]],
        columns: int,
        column_of: np.ndarray,
        valid: np.ndarray,
        interval_s: np.ndarray,
    ) -> list[tuple[Levels | None, bool]]:
        """Each of `metrics` (name, and True: drawn as per-second rates, False: as recorded, None: as rates if it rose
        and never fell over an interval that can be rated) at its least and greatest in each of `columns` columns, as
        16-bit levels of its own range (`Levels`; None: it holds no value), and whether that is its rates. Per row of
        the frame: `column_of` its column, `valid` whether the interval ending there can be rated, `interval_s` its
        seconds."""
        import numpy as np

        index = {name: i for i, (name, _) in enumerate(self.values.names())}
        rows = (
            self._per_read_row(np.asarray(column_of, dtype="<i4"), -1).tobytes(),
            self._per_read_row(np.asarray(valid, dtype=np.uint8), 0).tobytes(),
            self._per_read_row(np.asarray(interval_s, dtype="<f8"), np.nan).tobytes(),
        )
        return self.values.reduce([(index[name], shown) for name, shown in metrics], columns, *rows)
