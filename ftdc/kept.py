"""Every metric of a read kept as the bytes its delta walk found (`read_with_catalog(..., keep=True)`), reduced later
on a time axis without a frame: the explorer's one minimum and maximum per pixel column of each of a node's thousands
of metrics, from the analysis' own pass over the files, each chunk inflated once."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .paths import FtdcFile

if TYPE_CHECKING:
    import numpy as np

    from . import _native

# Metrics reduced per native call: their extremes are handed back as bytes per call, so a batch bounds that memory
# (2,400 columns x 2 x 8 bytes a metric: 10 MB a batch, against 90 MB for the 2,300 metrics of a 7.0 node at once).
BATCH = 256


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
    ) -> Iterator[tuple[list[str], np.ndarray, list[bool]]]:
        """Each of `metrics` (name, and True: drawn as per-second rates, False: as recorded, None: as rates if it rose
        and never fell over an interval that can be rated) at its least and greatest in each of `columns` columns, a
        batch at a time: (names, (metrics, columns, 2) array, NaN where a column holds none, whether each is rates).
        Per row of the frame:
        `column_of` its column, `valid` whether the interval ending there can be rated, `interval_s` its seconds."""
        import numpy as np

        index = {name: i for i, (name, _) in enumerate(self.values.names())}
        rows = (
            self._per_read_row(np.asarray(column_of, dtype="<i4"), -1).tobytes(),
            self._per_read_row(np.asarray(valid, dtype=np.uint8), 0).tobytes(),
            self._per_read_row(np.asarray(interval_s, dtype="<f8"), np.nan).tobytes(),
        )
        for k in range(0, len(metrics), BATCH):
            batch = metrics[k : k + BATCH]
            pairs, rated = self.values.reduce([(index[name], shown) for name, shown in batch], columns, *rows)
            yield [name for name, _ in batch], np.frombuffer(pairs, dtype="<f8").reshape(len(batch), columns, 2), rated
