//! The FTDC delta stream: unsigned LEB128 varints, with a run of k zero
//! deltas written as the pair `0, k-1`. The pending-zero count carries
//! across metric columns, so decoding state lives in `DeltaReader`.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarintError {
    pub offset: usize,
    pub message: &'static str,
}

impl fmt::Display for VarintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "delta stream offset {}: {}", self.offset, self.message)
    }
}

impl VarintError {
    /// The error placed in the chunk's payload, whose delta stream starts at `deltas_start`.
    pub fn in_payload(&self, deltas_start: usize) -> String {
        format!("payload offset {}: {}", deltas_start + self.offset, self.message)
    }
}

/// At most 10 bytes encode a u64.
const MAX_VARINT_BYTES: usize = 10;

pub fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads deltas column by column, carrying zero runs across columns.
pub struct DeltaReader<'a> {
    buf: &'a [u8],
    pos: usize,
    pending_zeros: u64,
}

impl<'a> DeltaReader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        DeltaReader { buf, pos: 0, pending_zeros: 0 }
    }

    /// Resumes reading at a state saved with `position`, on a buffer that
    /// starts where that state's offset was.
    pub fn resume(buf: &'a [u8], pending_zeros: u64) -> Self {
        DeltaReader { buf, pos: 0, pending_zeros }
    }

    /// Byte offset and pending zero count: everything needed to resume here.
    pub fn position(&self) -> (usize, u64) {
        (self.pos, self.pending_zeros)
    }

    #[inline(always)]
    fn read_varint(&mut self) -> Result<u64, VarintError> {
        let buf = self.buf;
        if let Some(&b) = buf.get(self.pos) {
            if b < 0x80 {
                self.pos += 1;
                return Ok(b as u64);
            }
        }
        let start = self.pos;
        let mut value = 0u64;
        for i in 0..MAX_VARINT_BYTES {
            let b = *buf.get(start + i).ok_or(VarintError { offset: start, message: "varint cut off at end of stream" })?;
            value |= ((b & 0x7f) as u64) << (7 * i);
            if b < 0x80 {
                self.pos = start + i + 1;
                return Ok(value);
            }
        }
        Err(VarintError { offset: start, message: "varint longer than 10 bytes" })
    }

    /// Reads a delta that is known to start a new value (not inside a run).
    #[inline(always)]
    fn start_delta(&mut self) -> Result<u64, VarintError> {
        let d = self.read_varint()?;
        if d == 0 {
            // `0, N` encodes N + 1 zeros; this call consumes the first.
            self.pending_zeros = self.read_varint()?;
        }
        Ok(d)
    }

    /// Decodes `out.len()` values following `value`: each is the previous plus
    /// the next delta, wrapping in u64 and read back as i64.
    pub fn decode_column(&mut self, mut value: u64, out: &mut [i64]) -> Result<(), VarintError> {
        let mut i = 0;
        let n = out.len();
        while i < n {
            if self.pending_zeros > 0 {
                let k = (self.pending_zeros.min((n - i) as u64)) as usize;
                out[i..i + k].fill(value as i64);
                i += k;
                self.pending_zeros -= k as u64;
                continue;
            }
            value = value.wrapping_add(self.start_delta()?);
            out[i] = value as i64;
            i += 1;
        }
        Ok(())
    }

    /// Consumes `n` deltas without keeping them; true when every one was zero.
    pub fn skip(&mut self, n: u64) -> Result<bool, VarintError> {
        let mut left = n;
        let mut all_zero = true;
        while left > 0 {
            if self.pending_zeros > 0 {
                let k = self.pending_zeros.min(left);
                self.pending_zeros -= k;
                left -= k;
                continue;
            }
            all_zero &= self.start_delta()? == 0;
            left -= 1;
        }
        Ok(all_zero)
    }

    /// The stream must end exactly after the last column with no zeros pending.
    pub fn finish(&self) -> Result<(), VarintError> {
        if self.pending_zeros != 0 {
            return Err(VarintError { offset: self.pos, message: "zero run extends past the last metric" });
        }
        if self.pos != self.buf.len() {
            return Err(VarintError { offset: self.pos, message: "bytes remain after the last metric" });
        }
        Ok(())
    }
}

/// Encodes a column-major matrix of deltas the way mongod's compressor does:
/// zero runs are counted across column boundaries and flushed as `0, k-1`.
pub struct DeltaWriter {
    pub out: Vec<u8>,
    zeros: u64,
}

impl DeltaWriter {
    pub fn new() -> Self {
        DeltaWriter { out: Vec::new(), zeros: 0 }
    }

    pub fn push(&mut self, delta: u64) {
        if delta == 0 {
            self.zeros += 1;
            return;
        }
        self.flush_zeros();
        write_varint(&mut self.out, delta);
    }

    fn flush_zeros(&mut self) {
        if self.zeros > 0 {
            write_varint(&mut self.out, 0);
            write_varint(&mut self.out, self.zeros - 1);
            self.zeros = 0;
        }
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.flush_zeros();
        self.out
    }
}

impl Default for DeltaWriter {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(columns: &[Vec<i64>]) {
        let rows = columns[0].len();
        let mut w = DeltaWriter::new();
        for c in columns {
            for j in 1..rows {
                w.push((c[j] as u64).wrapping_sub(c[j - 1] as u64));
            }
        }
        let bytes = w.finish();
        let mut r = DeltaReader::new(&bytes);
        for c in columns {
            let mut out = vec![0i64; rows - 1];
            r.decode_column(c[0] as u64, &mut out).unwrap();
            assert_eq!(&out[..], &c[1..]);
        }
        r.finish().unwrap();
    }

    #[test]
    fn zero_runs_cross_columns() {
        roundtrip(&[vec![1, 1, 1, 1], vec![5, 5, 5, 6], vec![i64::MAX, i64::MIN, 0, -1]]);
    }

    #[test]
    fn run_of_four_is_zero_three() {
        let mut w = DeltaWriter::new();
        for _ in 0..4 {
            w.push(0);
        }
        assert_eq!(w.finish(), vec![0, 3]);
    }

    #[test]
    fn skip_matches_decode() {
        let cols = vec![vec![0, 0, 0, 0, 9], vec![3, 3, 3, 3, 3], vec![1, 2, 3, 4, 5]];
        let mut w = DeltaWriter::new();
        for c in &cols {
            for j in 1..5 {
                w.push((c[j] - c[j - 1]) as u64);
            }
        }
        let bytes = w.finish();
        let mut r = DeltaReader::new(&bytes);
        r.skip(8).unwrap();
        let mut out = vec![0; 4];
        r.decode_column(1, &mut out).unwrap();
        assert_eq!(out, vec![2, 3, 4, 5]);
        r.finish().unwrap();
    }

    #[test]
    fn skip_says_whether_every_delta_was_zero() {
        // Columns [0 0 0 0 9] [3 3 3 3 3] [1 2 3 4 5]: a zero run crosses from the first into the second.
        let mut w = DeltaWriter::new();
        for d in [0, 0, 0, 9, 0, 0, 0, 0, 1, 1, 1, 1] {
            w.push(d);
        }
        let bytes = w.finish();
        let mut r = DeltaReader::new(&bytes);
        assert_eq!([r.skip(4), r.skip(4), r.skip(4)].map(Result::unwrap), [false, true, false]);
        r.finish().unwrap();
    }

    #[test]
    fn errors_instead_of_panics() {
        let mut r = DeltaReader::new(&[0x80, 0x80]);
        assert!(r.skip(1).is_err());
        let mut r = DeltaReader::new(&[0xff; 11]);
        assert!(r.skip(1).is_err());
        let r = DeltaReader::new(&[0, 5]);
        let mut r2 = DeltaReader::new(&[0, 5]);
        r2.skip(2).unwrap();
        assert!(r2.finish().is_err());
        assert!(r.finish().is_err());
    }
}
