"""FTDCWriter: a diagnostic.data directory written the way mongod writes it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from ..timeutil import TimeArg, to_ms
from .compressor import Chunk, ChunkCompressor
from .documents import TYPE_METADATA, Document, chunk_document, metadata_document, root_start_ms, to_bson
from .files import archive_path, recover_interim, remove_interim, write_interim

MB = 1024 * 1024


class FTDCWriter:
    """Writes samples to `directory` as mongod's FTDC file manager does.

    Each archive file `metrics.<time>-00000` starts with a type-0 document
    holding `metadata` (when given); samples are grouped into type-1 chunks
    of at most `samples_per_chunk`, and a new chunk starts whenever the
    schema changes. Every `samples_per_interim_update` samples the open
    chunk is rewritten to `metrics.interim`. After a write takes the archive
    file past `file_size_mb`, the open chunk is flushed into it and a new
    file begins. `close()` (or leaving the `with` block) flushes.

    A sample is a dict, a `bson.SON` (for repeated keys), a RawBSONDocument
    or BSON bytes. Its time is the root `start` Date, or `date` when given.
    A previous writer's metrics.interim is recovered into the first file.
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        *,
        metadata: Document | None = None,
        samples_per_chunk: int = 300,
        samples_per_interim_update: int = 10,
        file_size_mb: float = 10,
    ):
        if samples_per_interim_update < 2:
            raise ValueError("samples_per_interim_update must be at least 2")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._metadata = None if metadata is None else to_bson(metadata)
        self._interim_every = samples_per_interim_update
        self._max_file_bytes = file_size_mb * MB
        self._compressor = ChunkCompressor(samples_per_chunk)
        self._archive: BinaryIO | None = None
        self._size = 0
        self._started = False
        self.files: list[Path] = []

    def __enter__(self) -> FTDCWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def add_sample(self, sample: Document, date: TimeArg = None) -> None:
        """Adds one sample (mongod's `writeSampleAndRotateIfNeeded`)."""
        raw = to_bson(sample)
        date_ms = to_ms(date) if date is not None else root_start_ms(raw)
        if date_ms is None:
            raise ValueError("the sample has no root `start` Date; pass date=")
        if self._archive is None:
            self._open(date_ms, recover=not self._started)
        self._write_sample(raw, date_ms)
        if self._size > self._max_file_bytes:
            self._close_archive()
            self._open(date_ms, recover=False)

    def close(self, *, flush: bool = True) -> None:
        """Flushes the open chunk into the archive file and removes metrics.interim.

        `flush=False` stops as a crashed mongod does: the open chunk's samples
        stay only in metrics.interim (as of its last update).
        """
        if self._archive is None:
            return
        if flush:
            self._close_archive()
        else:
            self._compressor.reset()
            self._archive.close()
            self._archive = None

    def _write_sample(self, raw: bytes, date_ms: int) -> None:
        closed = self._compressor.add_sample(raw, date_ms)
        if closed is not None:
            self._flush(closed)
        elif (
            self._compressor.delta_count
            and self._compressor.delta_count % self._interim_every == 0
            and (open_chunk := self._compressor.compressed()) is not None
        ):
            write_interim(self.directory, chunk_document(open_chunk.date_ms, open_chunk.data))

    def _flush(self, chunk: Chunk | None) -> None:
        if chunk is not None:
            self._append(chunk_document(chunk.date_ms, chunk.data))
        remove_interim(self.directory)

    def _open(self, date_ms: int, *, recover: bool) -> None:
        """Starts an archive file: recovered interim samples first, then metadata (as mongod)."""
        path = archive_path(self.directory, date_ms)
        self._archive = open(path, "ab")
        self._size = path.stat().st_size
        self._started = True
        self.files.append(path)
        for doc_type, document, recovered_ms in recover_interim(self.directory) if recover else []:
            if doc_type == TYPE_METADATA:
                self._append(metadata_document(recovered_ms, document))
            else:
                self._write_sample(document, recovered_ms)
        if self._metadata is not None:
            self._append(metadata_document(root_start_ms(self._metadata) or date_ms, self._metadata))

    def _close_archive(self) -> None:
        self._flush(self._compressor.compressed())
        self._compressor.reset()
        assert self._archive is not None, "closed only while open"
        self._archive.close()
        self._archive = None

    def _append(self, document: bytes) -> None:
        assert self._archive is not None, "documents are appended to the open archive file"
        self._archive.write(document)
        self._size += len(document)
