//! A type-1 metric chunk: `uint32 uncompressedLength ‖ zlib stream`, which
//! inflates to `reference BSON ‖ uint32 metricCount ‖ uint32 deltaCount ‖ deltas`.

use std::sync::atomic::{AtomicU64, Ordering};

use flate2::{Decompress, FlushDecompress, Status};

use crate::bson::{document_len, read_u32};

/// zlib cannot expand input by more than about 1032:1, so a declared
/// length beyond that is a lie and is never allocated.
const MAX_INFLATE_RATIO: usize = 1032;
/// Zero runs let a few bytes claim any number of samples, so a chunk may
/// hold at most this many samples: mongod writes 300 by default, and its
/// diagnosticDataCollectionSamplesPerChunk (no upper bound) or a Go writer
/// may write more, so the bound is generous...
pub const MAX_CHUNK_SAMPLES: u64 = 100_000;
/// ...and at most this many values (metricCount x samples): about 15 times
/// the largest real chunk (8.0: 3479 metrics x 300 samples).
pub const MAX_CHUNK_VALUES: u64 = 16_000_000;

/// ...and at most this many metrics: 14 times the widest real chunk (8.0: 3479).
/// Every reader holds a column per metric, and an output's columns each cost
/// Arrow and Parquet kilobytes of their own however few rows they hold, so a
/// 3 MB chunk of a million metrics took 6.75 GB to export one row.
pub const MAX_CHUNK_METRICS: u32 = 50_000;

/// Process-wide counters, read by tests that prove chunks were skipped.
pub static CHUNKS_INFLATED: AtomicU64 = AtomicU64::new(0);
pub static BYTES_INFLATED: AtomicU64 = AtomicU64::new(0);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkError {
    /// Offset within the chunk's `data` field.
    pub offset: usize,
    pub message: String,
}

fn err(offset: usize, message: impl Into<String>) -> ChunkError {
    ChunkError { offset, message: message.into() }
}

/// Resumable inflation of one chunk's `data`, so a reader that needs only
/// the reference document and the first column stops early.
pub struct Inflater<'a> {
    z: Decompress,
    stream: &'a [u8],
    declared: usize,
    pub out: Vec<u8>,
    ended: bool,
}

impl<'a> Inflater<'a> {
    pub fn new(data: &'a [u8]) -> Result<Self, ChunkError> {
        let declared = read_u32(data, 0).ok_or_else(|| err(0, "chunk data shorter than its length prefix"))? as usize;
        let stream = &data[4..];
        let ceiling = stream.len().saturating_mul(MAX_INFLATE_RATIO).saturating_add(64);
        if declared > ceiling {
            return Err(err(0, format!("uncompressed length {declared} is implausible for {} compressed bytes", stream.len())));
        }
        CHUNKS_INFLATED.fetch_add(1, Ordering::Relaxed);
        Ok(Inflater { z: Decompress::new(true), stream, declared, out: Vec::new(), ended: false })
    }

    /// Inflates until at least `n` bytes are out (or the stream ends).
    pub fn fill_to(&mut self, n: usize) -> Result<(), ChunkError> {
        // One spare byte lets zlib reach the end of stream (and its checksum)
        // when the payload is exactly as declared, and shows an overlong one.
        let target = n.min(self.declared);
        let before = self.out.len();
        self.out.reserve((target + 1).saturating_sub(self.out.len()));
        while !self.ended && self.out.len() < target.max(1) {
            let consumed = self.z.total_in() as usize;
            let produced = self.out.len();
            let status = self
                .z
                .decompress_vec(&self.stream[consumed..], &mut self.out, FlushDecompress::Finish)
                .map_err(|e| err(4 + self.z.total_in() as usize, format!("zlib: {e}")))?;
            if status != Status::StreamEnd
                && self.z.total_in() as usize == consumed
                && self.out.len() == produced
                && self.out.len() < self.out.capacity()
            {
                return Err(err(4 + consumed, "zlib stream makes no progress"));
            }
            if self.out.len() > self.declared {
                return Err(err(0, format!("inflates to more than the declared {} bytes", self.declared)));
            }
            match status {
                Status::StreamEnd => self.ended = true,
                _ if self.out.len() < self.out.capacity() && self.z.total_in() as usize >= self.stream.len() => {
                    return Err(err(4 + self.stream.len(), "zlib stream cut off"));
                }
                _ => self.out.reserve((target + 1).saturating_sub(self.out.len()).max(1)),
            }
        }
        BYTES_INFLATED.fetch_add((self.out.len() - before) as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Inflates the rest and checks the total against the declared length.
    pub fn finish(mut self) -> Result<Vec<u8>, ChunkError> {
        self.fill_to(usize::MAX)?;
        // Drive zlib to the end of stream to verify the checksum.
        if !self.ended {
            self.out.reserve(1);
            let consumed = self.z.total_in() as usize;
            let status = self
                .z
                .decompress_vec(&self.stream[consumed..], &mut self.out, FlushDecompress::Finish)
                .map_err(|e| err(4 + self.z.total_in() as usize, format!("zlib: {e}")))?;
            if status != Status::StreamEnd || self.out.len() > self.declared {
                return Err(err(0, format!("inflates to more than the declared {} bytes", self.declared)));
            }
        }
        if self.out.len() != self.declared {
            return Err(err(0, format!("inflated {} bytes but the chunk declares {}", self.out.len(), self.declared)));
        }
        Ok(self.out)
    }
}

/// Inflates a whole chunk.
pub fn inflate(data: &[u8]) -> Result<Vec<u8>, ChunkError> {
    Inflater::new(data)?.finish()
}

/// Where the parts of an inflated payload are.
#[derive(Debug, Clone, Copy)]
pub struct Header {
    pub ref_len: usize,
    pub metric_count: u32,
    pub delta_count: u32,
}

impl Header {
    pub fn deltas_start(&self) -> usize {
        self.ref_len + 8
    }
    pub fn samples(&self) -> usize {
        self.delta_count as usize + 1
    }
}

/// Reads the reference document length and the two counts (metricCount first).
pub fn parse_header(payload: &[u8]) -> Result<Header, ChunkError> {
    let ref_len = document_len(payload, 0).map_err(|e| err(e.offset, format!("reference document: {}", e.message)))?;
    let metric_count = read_u32(payload, ref_len).ok_or_else(|| err(ref_len, "metricCount missing after the reference document"))?;
    let delta_count = read_u32(payload, ref_len + 4).ok_or_else(|| err(ref_len + 4, "deltaCount missing"))?;
    let samples = delta_count as u64 + 1;
    // A chunk without metrics still costs a time value per sample.
    if samples > MAX_CHUNK_SAMPLES || metric_count > MAX_CHUNK_METRICS || (metric_count.max(1) as u64) * samples > MAX_CHUNK_VALUES {
        return Err(err(
            ref_len,
            format!(
                "{metric_count} metrics x {samples} samples is implausible: this reader takes up to \
                 {MAX_CHUNK_SAMPLES} samples, {MAX_CHUNK_METRICS} metrics and {MAX_CHUNK_VALUES} values per chunk \
                 (mongod writes 300 samples of a few thousand metrics)"
            ),
        ));
    }
    let header = Header { ref_len, metric_count, delta_count };
    // Zero runs can cover any number of deltas in two bytes, so the stream
    // length bounds nothing except that a non-empty matrix needs one.
    if metric_count > 0 && delta_count > 0 && payload.len() <= header.deltas_start() {
        return Err(err(header.deltas_start(), "deltas missing for a non-empty chunk"));
    }
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{write::ZlibEncoder, Compression};
    use std::io::Write;

    fn chunk_data(payload: &[u8], declared: u32) -> Vec<u8> {
        let mut e = ZlibEncoder::new(Vec::new(), Compression::default());
        e.write_all(payload).unwrap();
        let mut d = declared.to_le_bytes().to_vec();
        d.extend(e.finish().unwrap());
        d
    }

    #[test]
    fn inflates_and_checks_length() {
        let payload = vec![7u8; 5000];
        assert_eq!(inflate(&chunk_data(&payload, 5000)).unwrap(), payload);
        assert!(inflate(&chunk_data(&payload, 4000)).is_err());
        assert!(inflate(&chunk_data(&payload, 6000)).is_err());
        assert!(inflate(&chunk_data(&payload, u32::MAX)).is_err());
        let data = chunk_data(&payload, 5000);
        let mut partial = Inflater::new(&data).unwrap();
        partial.fill_to(100).unwrap();
        assert!(partial.out.len() >= 100 && partial.out.len() < 5000);
    }

    #[test]
    fn implausible_counts_are_refused_before_allocating() {
        let mut payload = vec![5, 0, 0, 0, 0];
        payload.extend_from_slice(&3479u32.to_le_bytes());
        payload.extend_from_slice(&1_000_000u32.to_le_bytes());
        payload.extend_from_slice(&[0, 0xff, 0xff, 0x3f]);
        assert!(parse_header(&payload).unwrap_err().message.contains("implausible"));
        payload[5..9].copy_from_slice(&0u32.to_le_bytes());
        assert!(parse_header(&payload).is_err(), "no metrics, a million samples");
        payload[5..9].copy_from_slice(&3479u32.to_le_bytes());
        payload[9..13].copy_from_slice(&299u32.to_le_bytes());
        assert_eq!(parse_header(&payload).unwrap().samples(), 300);
        payload[5..9].copy_from_slice(&(MAX_CHUNK_METRICS + 1).to_le_bytes());
        payload[9..13].copy_from_slice(&0u32.to_le_bytes());
        assert!(parse_header(&payload).unwrap_err().message.contains("implausible"), "too wide, even for one sample");
    }

    #[test]
    fn corrupt_stream_is_an_error() {
        let mut d = chunk_data(&(0..5000u32).map(|i| (i * 7 % 251) as u8).collect::<Vec<_>>(), 5000);
        let n = d.len();
        d[n / 2] ^= 0xff;
        assert!(inflate(&d).is_err());
        assert!(inflate(&d[..n / 2]).is_err());
        assert!(inflate(&[1, 2]).is_err());
    }
}
