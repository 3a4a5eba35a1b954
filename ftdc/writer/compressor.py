"""Samples to metric chunks, deciding chunk boundaries as mongod's FTDCCompressor does."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from .. import _native

# mongod's minimum for diagnosticDataCollectionSamplesPerChunk.
MIN_SAMPLES_PER_CHUNK = 2


@dataclass(frozen=True)
class Chunk:
    """A finished metric chunk: its `_id` (first sample's time) and `data` bytes."""

    date_ms: int
    data: bytes
    samples: int


def compress(payload: bytes) -> bytes:
    """`uint32 LE uncompressedLength ‖ zlib stream`, the `data` of a type-1 document."""
    return struct.pack("<I", len(payload)) + zlib.compress(payload)


class ChunkCompressor:
    """Collects samples into chunks of at most `samples_per_chunk`.

    The first sample of a chunk is its reference document; a sample whose
    schema differs from the reference (mongod's rule) closes the chunk and
    becomes the next reference; a full chunk closes and the next sample
    starts a new one.
    """

    def __init__(self, samples_per_chunk: int = 300):
        if samples_per_chunk < MIN_SAMPLES_PER_CHUNK:
            raise ValueError(f"samples_per_chunk must be at least {MIN_SAMPLES_PER_CHUNK}")
        # The reference is the first sample, so a chunk holds one delta fewer.
        self._max_deltas = samples_per_chunk - 1
        self._encoder: _native.ChunkEncoder | None = None
        self._date_ms = 0

    @property
    def delta_count(self) -> int:
        """Samples in the open chunk after its reference."""
        return self._encoder.delta_count if self._encoder else 0

    def add_sample(self, sample: bytes, date_ms: int) -> Chunk | None:
        """Adds one BSON sample; returns the chunk this closed, if any.

        A sample mongod would refuse (malformed BSON, nesting deeper than 10
        levels) raises ValueError and leaves the open chunk unchanged.
        """
        if self._encoder is None:
            self._start(sample, date_ms)
            return None
        if not self._encoder.push(sample):
            closed = self.compressed()
            self._start(sample, date_ms)
            return closed
        if self._encoder.delta_count == self._max_deltas:
            closed = self.compressed()
            self._encoder = None
            return closed
        return None

    def compressed(self) -> Chunk | None:
        """The open chunk as it stands (for metrics.interim and for flushing)."""
        if self._encoder is None:
            return None
        return Chunk(self._date_ms, compress(self._encoder.payload()), self._encoder.delta_count + 1)

    def reset(self) -> None:
        """Drops the open chunk."""
        self._encoder = None

    def _start(self, reference: bytes, date_ms: int) -> None:
        self._encoder = _native.ChunkEncoder(reference)
        self._date_ms = date_ms
