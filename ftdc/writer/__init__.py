"""Writing FTDC files exactly as mongod does (see FTDCWriter)."""

from .compressor import Chunk, ChunkCompressor
from .writer import FTDCWriter

__all__ = ["Chunk", "ChunkCompressor", "FTDCWriter"]
