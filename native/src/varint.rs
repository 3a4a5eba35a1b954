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

/// The top bit of each byte of a word: set where a varint goes on.
const HIGH: u64 = 0x8080_8080_8080_8080;
const ONES: u64 = 0x0101_0101_0101_0101;

/// Whether a byte of `word` is 0 (the classic test, exact as a yes or no).
#[inline(always)]
fn has_zero_byte(word: u64) -> bool {
    word.wrapping_sub(ONES) & !word & HIGH != 0
}

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

    /// The next eight bytes of the stream, as a little-endian word.
    #[inline(always)]
    fn word(&self) -> Option<u64> {
        Some(u64::from_le_bytes(self.buf.get(self.pos..self.pos + 8)?.try_into().ok()?))
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
            // Eight deltas of one byte each, none 0 (a counter that moves by less than 128 a sample): added without a
            // test a byte.
            if n - i >= 8 {
                if let Some(word) = self.word().filter(|&w| w & HIGH == 0 && !has_zero_byte(w)) {
                    for (k, slot) in out[i..i + 8].iter_mut().enumerate() {
                        value = value.wrapping_add((word >> (8 * k)) & 0xff);
                        *slot = value as i64;
                    }
                    self.pos += 8;
                    i += 8;
                    continue;
                }
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
            if let Some(count) = self.skip_word(left) {
                all_zero = false;
                left -= count;
                continue;
            }
            all_zero &= self.start_delta()? == 0;
            left -= 1;
        }
        Ok(all_zero)
    }

    /// The deltas of the next eight bytes at once, when they hold only varints of values other than 0 (no byte whose
    /// low seven bits are all 0: a 0 is `0x00`, or `0x80 .. 0x00` written long) and at most `left` of them end there:
    /// as many deltas as bytes below 0x80, none starting a zero run, read up to the last of those bytes. A skip walks
    /// every metric the read does not keep, a varint at a time: 15 % of an analysis' read, most of the catalog's. None
    /// where `start_delta` must take the next delta (a zero, a varint longer than the word, the stream's last bytes).
    #[inline(always)]
    fn skip_word(&mut self, left: u64) -> Option<u64> {
        let word = self.word()?;
        if has_zero_byte(word & !HIGH) {
            return None;
        }
        let ends = !word & HIGH;
        let count = u64::from(ends.count_ones());
        if count == 0 || count > left {
            return None;
        }
        // The last varint's final byte is the highest byte whose top bit is clear: everything up to it is consumed.
        self.pos += (71 - ends.leading_zeros() as usize) / 8;
        Some(count)
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

    /// A stream of every kind of delta: zero runs short and long, one-byte values, long varints, in no order.
    fn mixed_stream(seed: u64, deltas: usize) -> (Vec<u8>, Vec<u64>) {
        let mut state = seed | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut w = DeltaWriter::new();
        let mut written = Vec::with_capacity(deltas);
        while written.len() < deltas {
            let r = next();
            let delta = match r % 6 {
                0 => 0,
                1 | 2 => 1 + r % 127,
                3 => 128 + (r >> 8) % 20_000,
                4 => next() >> (r % 64),
                _ => 1 << (r % 64),
            };
            let repeat = if delta < 128 { 1 + (r >> 16) % 40 } else { 1 };
            for _ in 0..repeat.min((deltas - written.len()) as u64) {
                w.push(delta);
                written.push(delta);
            }
        }
        (w.finish(), written)
    }

    #[test]
    fn a_word_of_whole_varints_is_skipped_at_once_and_one_holding_a_zero_is_not() {
        // 1, 2, 300 (two bytes), 4, 5, 6, then 135 (0x87 0x01) cut by the word's end: six deltas, seven bytes.
        let bytes = [1, 2, 0xac, 0x02, 4, 5, 6, 0x87, 0x01, 9];
        let mut r = DeltaReader::new(&bytes);
        assert_eq!(r.skip_word(100), Some(6));
        assert_eq!(r.position(), (7, 0));
        assert_eq!(DeltaReader::new(&bytes).skip_word(5), None, "more deltas end there than are left");
        assert_eq!(DeltaReader::new(&[1, 0, 5, 1, 1, 1, 1, 1, 1]).skip_word(100), None, "a zero run starts there");
        assert_eq!(DeltaReader::new(&[1, 0x80, 0, 1, 1, 1, 1, 1, 1]).skip_word(100), None, "a zero written long");
        assert_eq!(DeltaReader::new(&[1, 1, 1, 1, 1, 1, 1]).skip_word(100), None, "fewer than eight bytes");
    }

    #[test]
    fn skip_by_words_is_skip_by_varints() {
        // Every skip, of any length and from any point, ends where decoding the same deltas ends and says whether
        // they were all zero, as the varint-at-a-time walk does.
        for seed in 1..200u64 {
            let (bytes, deltas) = mixed_stream(seed, 700);
            let (mut fast, mut slow) = (DeltaReader::new(&bytes), DeltaReader::new(&bytes));
            let mut at = 0usize;
            let mut step = seed as usize % 37 + 1;
            while at < deltas.len() {
                let n = step.min(deltas.len() - at);
                let mut out = vec![0i64; n];
                slow.decode_column(0, &mut out).unwrap();
                let zero = deltas[at..at + n].iter().all(|&d| d == 0);
                assert_eq!(fast.skip(n as u64), Ok(zero), "seed {seed} at {at}");
                assert_eq!(fast.position(), slow.position(), "seed {seed} at {at}");
                at += n;
                step = step * 7 % 41 + 1;
            }
            fast.finish().unwrap();
        }
    }

    #[test]
    fn decoding_by_words_gives_every_delta_written() {
        // One-byte deltas in runs of any length beside the other kinds: each column decoded as the running sum of
        // exactly the deltas written.
        for seed in 1..200u64 {
            let (bytes, deltas) = mixed_stream(seed.wrapping_mul(0x9e37_79b9), 900);
            let mut r = DeltaReader::new(&bytes);
            let (mut at, mut value) = (0usize, seed);
            for width in [1usize, 7, 8, 9, 16, 300, 559] {
                let mut out = vec![0i64; width];
                r.decode_column(value, &mut out).unwrap();
                for (k, got) in out.iter().enumerate() {
                    value = value.wrapping_add(deltas[at + k]);
                    assert_eq!(*got, value as i64, "seed {seed} delta {}", at + k);
                }
                at += width;
            }
            r.finish().unwrap();
        }
    }

    /// The stream walked byte by byte, written apart from the reader: where its first error is, as the reader says
    /// it (a varint cut off or too long, a run past the last delta, bytes left over).
    fn walked(bytes: &[u8], deltas: usize) -> Result<(), VarintError> {
        let (mut pos, mut left) = (0usize, deltas as u64);
        let varint = |pos: &mut usize| -> Result<u64, VarintError> {
            let start = *pos;
            let mut value = 0u64;
            for i in 0..10 {
                let b = *bytes.get(start + i).ok_or(VarintError { offset: start, message: "varint cut off at end of stream" })?;
                value |= u64::from(b & 0x7f) << (7 * i);
                if b < 0x80 {
                    *pos = start + i + 1;
                    return Ok(value);
                }
            }
            Err(VarintError { offset: start, message: "varint longer than 10 bytes" })
        };
        while left > 0 {
            left -= 1;
            if varint(&mut pos)? == 0 {
                let run = varint(&mut pos)?;
                if run > left {
                    return Err(VarintError { offset: pos, message: "zero run extends past the last metric" });
                }
                left -= run;
            }
        }
        match pos == bytes.len() {
            true => Ok(()),
            false => Err(VarintError { offset: pos, message: "bytes remain after the last metric" }),
        }
    }

    #[test]
    fn a_cut_stream_fails_at_the_same_offset_skipped_by_words() {
        for seed in 1..60u64 {
            let (bytes, deltas) = mixed_stream(seed, 300);
            for cut in [bytes.len() - 1, bytes.len() / 2, 9] {
                let whole = |r: &mut DeltaReader| r.skip(deltas.len() as u64).and_then(|_| r.finish());
                let reference = walked(&bytes[..cut], deltas.len());
                assert!(reference.is_err());
                assert_eq!(whole(&mut DeltaReader::new(&bytes[..cut])), reference, "skip: seed {seed} cut {cut}");
                let mut decoded = DeltaReader::new(&bytes[..cut]);
                let by_decode = decoded.decode_column(0, &mut vec![0; deltas.len()]).and_then(|_| decoded.finish());
                assert_eq!(by_decode, reference, "decode: seed {seed} cut {cut}");
            }
        }
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
