//! Parquet files written straight from decoded columns: the dataset's samples (`ftdc/dataset.py`).
//!
//! Arrow's writer visits every value of every column chunk, about 30 µs a chunk and 5 – 6 ns a value whatever the
//! encoding, and in a window of FTDC most metrics do not move (1,942 of 2,323 on a 7.0 node). Here a column chunk
//! whose values are all one value is a one-entry dictionary and, per page, one run of index 0: a few bytes, written
//! in time that does not grow with the rows once the values are compared. The moving integers are
//! DELTA_BINARY_PACKED and booleans PLAIN, both LZ4_RAW-compressed (LZ4's block format, pure Rust).
//!
//! Only what the dataset needs: flat schemas of OPTIONAL INT64 (optionally TIMESTAMP(MICROS, UTC)) and BOOLEAN
//! columns, data pages of format v1 (what every reader takes), min/max statistics where asked. The metadata is
//! Thrift's compact protocol (<https://github.com/apache/parquet-format/blob/master/src/main/thrift/parquet.thrift>).

use std::borrow::Cow;
use std::io::{self, Write};

/// A column's type in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Int64,
    /// Microseconds since the epoch, UTC.
    Timestamp,
    Boolean,
}

pub struct Field {
    pub name: String,
    pub kind: Kind,
    /// Whether the column chunks carry min/max statistics (readers prune row groups on them).
    pub statistics: bool,
}

/// A column's values as Arrow lays them out, from the row group's first row.
pub enum Values<'a> {
    /// Each value times `scale` (1, or 1,000 for milliseconds written as microseconds).
    Int64 { values: &'a [i64], scale: i64 },
    /// Booleans held as integers (0 false, anything else true), as the decoder gives them.
    Flags(&'a [i64]),
    /// Booleans as a bitmap (bit i of byte i / 8, least significant first) from bit `offset`.
    Boolean { bits: &'a [u8], offset: usize },
    /// A column the rows do not hold: every value missing.
    Missing,
}

/// One column of a row group: its values, and its validity bitmap from bit `.1` (none when every row is valid).
pub struct Column<'a> {
    pub values: Values<'a>,
    pub validity: Option<(&'a [u8], usize)>,
}

/// Most rows a data page holds: about Arrow's 1 MB pages of int64 values.
const PAGE_ROWS: usize = 1 << 17;

// parquet.thrift's enums.
const TYPE_BOOLEAN: i32 = 0;
const TYPE_INT64: i32 = 2;
const PLAIN: i32 = 0;
const RLE: i32 = 3;
const DELTA_BINARY_PACKED: i32 = 5;
const RLE_DICTIONARY: i32 = 8;
const UNCOMPRESSED: i32 = 0;
const LZ4_RAW: i32 = 7;
const DATA_PAGE: i32 = 0;
const DICTIONARY_PAGE: i32 = 2;
const OPTIONAL: i32 = 1;
const TIMESTAMP_MICROS: i32 = 10;

/// Bit `i` of an Arrow bitmap.
fn bit(bits: &[u8], i: usize) -> bool {
    bits[i >> 3] >> (i & 7) & 1 == 1
}

/// The 8 bits of `bits` from bit `at`, of which only the first `count` (≤ 8) are kept, the rest zero.
fn byte_at(bits: &[u8], at: usize, count: usize) -> u8 {
    let (i, shift) = (at >> 3, at & 7);
    let mut byte = bits[i] >> shift;
    if shift > 0 && shift + count > 8 {
        byte |= bits[i + 1] << (8 - shift);
    }
    if count < 8 {
        byte &= (1u8 << count) - 1;
    }
    byte
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// How many of rows `rows` of `validity` are valid.
fn valid_count(validity: Option<(&[u8], usize)>, rows: std::ops::Range<usize>) -> usize {
    let Some((bits, offset)) = validity else { return rows.len() };
    let (mut at, end) = (offset + rows.start, offset + rows.end);
    let mut count = 0;
    while at < end {
        let n = (end - at).min(8);
        count += byte_at(bits, at, n).count_ones() as usize;
        at += n;
    }
    count
}

/// Definition levels (bit width 1) of `rows`, in the RLE / bit-packed hybrid with its 4-byte length: one run when
/// every row is valid or none is, else the bitmap itself, which is the bit-packed form of width 1.
fn definition_levels(out: &mut Vec<u8>, validity: Option<(&[u8], usize)>, rows: std::ops::Range<usize>, valid: usize) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    let n = rows.len();
    match validity {
        Some((bits, offset)) if valid != n && valid != 0 => {
            let groups = n.div_ceil(8);
            varint(out, ((groups as u64) << 1) | 1);
            out.extend((0..groups).map(|g| byte_at(bits, offset + rows.start + 8 * g, (n - 8 * g).min(8))));
        }
        _ => {
            varint(out, (n as u64) << 1);
            out.push(u8::from(valid == n));
        }
    }
    let length = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&length.to_le_bytes());
}

/// `values` packed `width` bits each, least significant bit first (Parquet's bit packing). Up to 32 bits a value, 32
/// bits are flushed at a time (a miniblock of 32 values packs to a whole number of them).
fn bit_pack(out: &mut Vec<u8>, values: &[u64], width: u32) {
    if width == 0 {
        return;
    }
    out.reserve((values.len() * width as usize).div_ceil(8));
    if width <= 32 {
        let (mut buffer, mut held) = (0u64, 0u32);
        for &v in values {
            buffer |= v << held;
            held += width;
            if held >= 32 {
                out.extend_from_slice(&(buffer as u32).to_le_bytes());
                buffer >>= 32;
                held -= 32;
            }
        }
        out.extend_from_slice(&buffer.to_le_bytes()[..held.div_ceil(8) as usize]);
        return;
    }
    let (mut buffer, mut held) = (0u128, 0u32);
    for &v in values {
        buffer |= u128::from(v) << held;
        held += width;
        while held >= 8 {
            out.push(buffer as u8);
            buffer >>= 8;
            held -= 8;
        }
    }
    if held > 0 {
        out.push(buffer as u8);
    }
}

const BLOCK: usize = 128;
const MINIBLOCKS: usize = 4;
const MINIBLOCK: usize = BLOCK / MINIBLOCKS;

/// DELTA_BINARY_PACKED: blocks of 128 deltas in 4 miniblocks, each packed at its own width above the block's least
/// delta. Deltas wrap, as readers add them back.
pub fn delta_binary_packed(out: &mut Vec<u8>, values: &[i64]) {
    varint(out, BLOCK as u64);
    varint(out, MINIBLOCKS as u64);
    varint(out, values.len() as u64);
    varint(out, zigzag(values.first().copied().unwrap_or(0)));
    let Some((&first, rest)) = values.split_first() else { return };
    let mut previous = first;
    for block in rest.chunks(BLOCK) {
        let mut deltas = [0i64; BLOCK];
        for (d, &v) in deltas.iter_mut().zip(block) {
            *d = v.wrapping_sub(previous);
            previous = v;
        }
        let min = deltas[..block.len()].iter().copied().min().unwrap_or(0);
        // The last miniblock is padded to 32 values with zero bits: its length is fixed by its width.
        let mut adjusted = [0u64; BLOCK];
        for (a, &d) in adjusted.iter_mut().zip(&deltas[..block.len()]) {
            *a = d.wrapping_sub(min) as u64;
        }
        let used = block.len().div_ceil(MINIBLOCK);
        let mut widths = [0u8; MINIBLOCKS];
        for (m, width) in widths.iter_mut().enumerate().take(used) {
            let bits = adjusted[m * MINIBLOCK..(m + 1) * MINIBLOCK].iter().fold(0, |acc, &a| acc | a);
            *width = (64 - bits.leading_zeros()) as u8;
        }
        varint(out, zigzag(min));
        out.extend_from_slice(&widths);
        for (m, &width) in widths.iter().enumerate().take(used) {
            bit_pack(out, &adjusted[m * MINIBLOCK..(m + 1) * MINIBLOCK], u32::from(width));
        }
    }
}

/// Thrift's compact protocol, as much of it as Parquet's metadata takes: fields are written in increasing id order
/// within each struct (the deltas of their ids), a struct ends with a stop byte.
struct Thrift {
    out: Vec<u8>,
    /// The last field id written in each open struct.
    last: Vec<i16>,
}

const T_TRUE: u8 = 1;
const T_FALSE: u8 = 2;
const T_I32: u8 = 5;
const T_I64: u8 = 6;
const T_BINARY: u8 = 8;
const T_LIST: u8 = 9;
const T_STRUCT: u8 = 12;

impl Thrift {
    fn new() -> Self {
        Thrift { out: Vec::new(), last: vec![0] }
    }

    fn field(&mut self, id: i16, kind: u8) {
        let last = self.last.last_mut().expect("a struct is open");
        let delta = id - *last;
        if (1..=15).contains(&delta) {
            self.out.push(((delta as u8) << 4) | kind);
        } else {
            self.out.push(kind);
            varint(&mut self.out, zigzag(i64::from(id)));
        }
        *last = id;
    }

    fn i32(&mut self, id: i16, v: i32) {
        self.field(id, T_I32);
        varint(&mut self.out, zigzag(i64::from(v)));
    }

    fn i64(&mut self, id: i16, v: i64) {
        self.field(id, T_I64);
        varint(&mut self.out, zigzag(v));
    }

    fn bool(&mut self, id: i16, v: bool) {
        self.field(id, if v { T_TRUE } else { T_FALSE });
    }

    fn binary(&mut self, id: i16, bytes: &[u8]) {
        self.field(id, T_BINARY);
        self.bytes(bytes);
    }

    fn bytes(&mut self, bytes: &[u8]) {
        varint(&mut self.out, bytes.len() as u64);
        self.out.extend_from_slice(bytes);
    }

    /// A field holding a struct; `end` closes it.
    fn begin(&mut self, id: i16) {
        self.field(id, T_STRUCT);
        self.last.push(0);
    }

    /// A struct that is an element of a list; `end` closes it.
    fn element(&mut self) {
        self.last.push(0);
    }

    fn end(&mut self) {
        self.out.push(0);
        self.last.pop();
    }

    fn list(&mut self, id: i16, kind: u8, size: usize) {
        self.field(id, T_LIST);
        if size < 15 {
            self.out.push(((size as u8) << 4) | kind);
        } else {
            self.out.push(0xF0 | kind);
            varint(&mut self.out, size as u64);
        }
    }

    /// The top-level struct, closed.
    fn finish(mut self) -> Vec<u8> {
        self.end();
        self.out
    }
}

/// A page's header (PageHeader with its DataPageHeader or DictionaryPageHeader), then its body.
fn page(out: &mut Vec<u8>, dictionary: bool, values: usize, encoding: i32, body: &[u8], uncompressed: usize) {
    let mut t = Thrift::new();
    t.i32(1, if dictionary { DICTIONARY_PAGE } else { DATA_PAGE });
    t.i32(2, uncompressed as i32);
    t.i32(3, body.len() as i32);
    t.begin(if dictionary { 7 } else { 5 });
    t.i32(1, values as i32);
    t.i32(2, encoding);
    if !dictionary {
        t.i32(3, RLE); // definition levels
        t.i32(4, RLE); // repetition levels (none: the schema is flat)
    }
    t.end();
    out.extend_from_slice(&t.finish());
    out.extend_from_slice(body);
}

/// A column chunk as it is written: its pages, and what its metadata says of them.
pub struct Chunk {
    bytes: Vec<u8>,
    /// Bytes of the dictionary page at its start, if any.
    dictionary: usize,
    codec: i32,
    encodings: &'static [i32],
    rows: usize,
    uncompressed: usize,
    /// Least and greatest value and the number of missing ones, when the field asks for statistics.
    statistics: Option<(Option<(i64, i64)>, usize)>,
}

/// A page's body in LZ4's block format, which LZ4_RAW is (no frame, no size prefix: the page header holds the
/// uncompressed size).
fn compress(body: &[u8]) -> Vec<u8> {
    lz4_flex::block::compress(body)
}

/// The values of the valid rows of `values` (with their scale applied): borrowed when there is nothing to leave out
/// or scale.
fn present<'a>(values: &'a [i64], scale: i64, validity: Option<(&[u8], usize)>) -> Cow<'a, [i64]> {
    match validity {
        None if scale == 1 => Cow::Borrowed(values),
        None => Cow::Owned(values.iter().map(|v| v.wrapping_mul(scale)).collect()),
        Some((bits, offset)) => {
            Cow::Owned(values.iter().enumerate().filter(|&(i, _)| bit(bits, offset + i)).map(|(_, v)| v.wrapping_mul(scale)).collect())
        }
    }
}

/// Whether every one of `values` is `v`: compared a block at a time without an early exit inside the block, so that
/// the comparison is vectorised (the check runs over every value of every window).
fn all_equal(values: &[i64], v: i64) -> bool {
    values.chunks(256).all(|block| block.iter().fold(true, |same, &w| same & (w == v)))
}

/// `rows` rows of `column` as one column chunk: a one-entry dictionary when its values are all one value, else
/// DELTA_BINARY_PACKED (integers) or PLAIN (booleans) pages, LZ4_RAW-compressed.
pub fn encode_chunk(column: &Column, rows: usize, statistics: bool) -> Chunk {
    let validity = column.validity;
    let pages: Vec<std::ops::Range<usize>> = (0..rows).step_by(PAGE_ROWS).map(|a| a..(a + PAGE_ROWS).min(rows)).collect();
    let missing = matches!(column.values, Values::Missing);
    let valid: Vec<usize> = pages.iter().map(|r| if missing { 0 } else { valid_count(validity, r.clone()) }).collect();
    let nulls = rows - valid.iter().sum::<usize>();
    let mut out = Vec::new();
    let mut uncompressed = 0;
    let mut body = Vec::new();
    match column.values {
        Values::Int64 { values, scale } => {
            let values = present(&values[..rows], scale, validity);
            let extremes = statistics
                .then(|| values.iter().fold(None, |m: Option<(i64, i64)>, &v| Some(m.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))))));
            if values.is_empty() {
                // No value at all: definition levels only.
                for range in &pages {
                    body.clear();
                    definition_levels(&mut body, validity, range.clone(), 0);
                    page(&mut out, false, range.len(), PLAIN, &body, body.len());
                }
                let uncompressed = out.len();
                let statistics = extremes.map(|e| (e, nulls));
                return Chunk { bytes: out, dictionary: 0, codec: UNCOMPRESSED, encodings: &[PLAIN, RLE], rows, uncompressed, statistics };
            }
            let one = values.first().filter(|&&v| all_equal(&values, v));
            if let Some(&one) = one {
                page(&mut out, true, 1, PLAIN, &one.to_le_bytes(), 8);
                let dictionary = out.len();
                for (range, &count) in pages.iter().zip(&valid) {
                    body.clear();
                    definition_levels(&mut body, validity, range.clone(), count);
                    body.push(1); // the indices' bit width: one entry, as Arrow writes it
                    if count > 0 {
                        varint(&mut body, (count as u64) << 1);
                        body.push(0);
                    }
                    page(&mut out, false, range.len(), RLE_DICTIONARY, &body, body.len());
                }
                let uncompressed = out.len();
                let statistics = extremes.map(|e| (e, nulls));
                return Chunk {
                    bytes: out,
                    dictionary,
                    codec: UNCOMPRESSED,
                    encodings: &[PLAIN, RLE, RLE_DICTIONARY],
                    rows,
                    uncompressed,
                    statistics,
                };
            }
            let mut at = 0;
            for (range, &count) in pages.iter().zip(&valid) {
                body.clear();
                definition_levels(&mut body, validity, range.clone(), count);
                delta_binary_packed(&mut body, &values[at..at + count]);
                at += count;
                let packed = compress(&body);
                let before = out.len();
                page(&mut out, false, range.len(), DELTA_BINARY_PACKED, &packed, body.len());
                uncompressed += out.len() - before - packed.len() + body.len();
            }
            let statistics = extremes.map(|e| (e, nulls));
            Chunk { bytes: out, dictionary: 0, codec: LZ4_RAW, encodings: &[DELTA_BINARY_PACKED, RLE], rows, uncompressed, statistics }
        }
        Values::Missing => {
            for range in &pages {
                body.clear();
                definition_levels(&mut body, None, range.clone(), 0);
                page(&mut out, false, range.len(), PLAIN, &body, body.len());
            }
            let uncompressed = out.len();
            let statistics = statistics.then_some((None, rows));
            Chunk { bytes: out, dictionary: 0, codec: UNCOMPRESSED, encodings: &[PLAIN, RLE], rows, uncompressed, statistics }
        }
        Values::Flags(_) | Values::Boolean { .. } => {
            let truth = |i: usize| match column.values {
                Values::Flags(values) => values[i] != 0,
                Values::Boolean { bits, offset } => bit(bits, offset + i),
                _ => unreachable!("a boolean column"),
            };
            for (range, &count) in pages.iter().zip(&valid) {
                body.clear();
                definition_levels(&mut body, validity, range.clone(), count);
                let mut packed = vec![0u8; count.div_ceil(8)];
                let mut k = 0;
                for i in range.clone() {
                    if validity.is_none_or(|(v, o)| bit(v, o + i)) {
                        packed[k >> 3] |= u8::from(truth(i)) << (k & 7);
                        k += 1;
                    }
                }
                body.extend_from_slice(&packed);
                let compressed = compress(&body);
                let before = out.len();
                page(&mut out, false, range.len(), PLAIN, &compressed, body.len());
                uncompressed += out.len() - before - compressed.len() + body.len();
            }
            Chunk { bytes: out, dictionary: 0, codec: LZ4_RAW, encodings: &[PLAIN, RLE], rows, uncompressed, statistics: None }
        }
    }
}

/// Where a written column chunk lies and what it holds, for the footer.
struct Placed {
    offset: u64,
    size: u64,
    /// Its metadata (its bytes already written).
    chunk: Chunk,
}

/// A Parquet file being written: `write` adds a row group of encoded column chunks, `finish` the footer.
pub struct FileWriter<W: Write> {
    out: W,
    written: u64,
    fields: Vec<Field>,
    row_groups: Vec<(usize, Vec<Placed>)>,
}

impl<W: Write> FileWriter<W> {
    pub fn new(mut out: W, fields: Vec<Field>) -> io::Result<Self> {
        out.write_all(b"PAR1")?;
        Ok(FileWriter { out, written: 4, fields, row_groups: Vec::new() })
    }

    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// A row group of `rows` rows: one chunk per field, in order (`encode_chunk`). The bytes are written; the chunks'
    /// pages are dropped, their metadata kept for the footer.
    pub fn write(&mut self, rows: usize, chunks: Vec<Chunk>) -> io::Result<()> {
        assert_eq!(chunks.len(), self.fields.len(), "one chunk per field");
        let mut placed = Vec::with_capacity(chunks.len());
        for chunk in chunks {
            assert_eq!(chunk.rows, rows, "every chunk of a row group holds its rows");
            self.out.write_all(&chunk.bytes)?;
            let (offset, size) = (self.written, chunk.bytes.len() as u64);
            self.written += size;
            placed.push(Placed { offset, size, chunk: Chunk { bytes: Vec::new(), ..chunk } });
        }
        self.row_groups.push((rows, placed));
        Ok(())
    }

    /// The footer (FileMetaData, its length, the magic), and the writer flushed; returns it.
    pub fn finish(mut self) -> io::Result<W> {
        let footer = self.footer();
        self.out.write_all(&footer)?;
        self.out.write_all(&(footer.len() as u32).to_le_bytes())?;
        self.out.write_all(b"PAR1")?;
        self.out.flush()?;
        Ok(self.out)
    }

    fn footer(&self) -> Vec<u8> {
        let mut t = Thrift::new();
        t.i32(1, 2); // format version 2: RLE_DICTIONARY, DELTA_BINARY_PACKED and logical types
        t.list(2, T_STRUCT, self.fields.len() + 1);
        t.element();
        t.binary(4, b"schema");
        t.i32(5, self.fields.len() as i32);
        t.end();
        for field in &self.fields {
            t.element();
            t.i32(1, if field.kind == Kind::Boolean { TYPE_BOOLEAN } else { TYPE_INT64 });
            t.i32(3, OPTIONAL);
            t.binary(4, field.name.as_bytes());
            if field.kind == Kind::Timestamp {
                t.i32(6, TIMESTAMP_MICROS);
                t.begin(10); // LogicalType
                t.begin(8); // TIMESTAMP
                t.bool(1, true); // isAdjustedToUTC
                t.begin(2); // unit
                t.begin(2); // MICROS
                t.end();
                t.end();
                t.end();
                t.end();
            }
            t.end();
        }
        t.i64(3, self.row_groups.iter().map(|(rows, _)| *rows as i64).sum());
        t.list(4, T_STRUCT, self.row_groups.len());
        for (rows, chunks) in &self.row_groups {
            t.element();
            t.list(1, T_STRUCT, chunks.len());
            for (field, placed) in self.fields.iter().zip(chunks) {
                let chunk = &placed.chunk;
                t.element();
                t.i64(2, placed.offset as i64);
                t.begin(3); // ColumnMetaData
                t.i32(1, if field.kind == Kind::Boolean { TYPE_BOOLEAN } else { TYPE_INT64 });
                t.list(2, T_I32, chunk.encodings.len());
                for &e in chunk.encodings {
                    varint(&mut t.out, zigzag(i64::from(e)));
                }
                t.list(3, T_BINARY, 1);
                t.bytes(field.name.as_bytes());
                t.i32(4, chunk.codec);
                t.i64(5, chunk.rows as i64);
                t.i64(6, chunk.uncompressed as i64);
                t.i64(7, placed.size as i64);
                t.i64(9, (placed.offset + chunk.dictionary as u64) as i64);
                if chunk.dictionary > 0 {
                    t.i64(11, placed.offset as i64);
                }
                if let Some((extremes, nulls)) = chunk.statistics {
                    t.begin(12);
                    t.i64(3, nulls as i64);
                    if let Some((lo, hi)) = extremes {
                        t.binary(5, &hi.to_le_bytes());
                        t.binary(6, &lo.to_le_bytes());
                    }
                    t.end();
                }
                t.end();
                t.end();
            }
            t.i64(2, chunks.iter().map(|p| p.chunk.uncompressed as i64).sum());
            t.i64(3, *rows as i64);
            if let Some(first) = chunks.first() {
                t.i64(5, first.offset as i64);
            }
            t.i64(6, chunks.iter().map(|p| p.size as i64).sum());
            t.end();
        }
        t.binary(6, b"ftdc-analyze");
        // Every column's values ordered as their type says (signed integers): readers then trust min/max.
        t.list(7, T_STRUCT, self.fields.len());
        for _ in &self.fields {
            t.element();
            t.begin(1); // TYPE_ORDER
            t.end();
            t.end();
        }
        t.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_varint(bytes: &[u8], at: &mut usize) -> u64 {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let b = bytes[*at];
            *at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return v;
            }
            shift += 7;
        }
    }

    fn unzigzag(v: u64) -> i64 {
        (v >> 1) as i64 ^ -((v & 1) as i64)
    }

    fn unpack(bytes: &[u8], at: &mut usize, count: usize, width: u32) -> Vec<u64> {
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            let mut v = 0u64;
            for b in 0..width as usize {
                let bit = i * width as usize + b;
                v |= u64::from(bytes[*at + bit / 8] >> (bit % 8) & 1) << b;
            }
            out.push(v);
        }
        *at += (count * width as usize).div_ceil(8);
        out
    }

    /// DELTA_BINARY_PACKED read as the format says, independently of the writer.
    fn undelta(bytes: &[u8]) -> Vec<i64> {
        let mut at = 0;
        let (block, miniblocks) = (read_varint(bytes, &mut at) as usize, read_varint(bytes, &mut at) as usize);
        let total = read_varint(bytes, &mut at) as usize;
        let mut values = Vec::new();
        let mut last = unzigzag(read_varint(bytes, &mut at));
        if total > 0 {
            values.push(last);
        }
        while values.len() < total {
            let min = unzigzag(read_varint(bytes, &mut at));
            let widths: Vec<u32> = bytes[at..at + miniblocks].iter().map(|&w| u32::from(w)).collect();
            at += miniblocks;
            for width in widths {
                if values.len() == total {
                    break;
                }
                for d in unpack(bytes, &mut at, block / miniblocks, width) {
                    if values.len() < total {
                        last = last.wrapping_add(min.wrapping_add(d as i64));
                        values.push(last);
                    }
                }
            }
        }
        assert_eq!(at, bytes.len(), "nothing after the last miniblock");
        values
    }

    #[test]
    fn delta_binary_packed_reads_back_whatever_the_deltas() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut random = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let cases: Vec<Vec<i64>> = vec![
            vec![],
            vec![5],
            vec![i64::MIN, i64::MAX, i64::MIN, 0, -1],
            (0..129).collect(),
            (0..1000).map(|i| i / 300).collect(),
            (0..777).map(|_| random() as i64).collect(),
            (0..300).map(|_| (random() % 1000) as i64 - 500).collect(),
        ];
        for values in cases {
            let mut out = Vec::new();
            delta_binary_packed(&mut out, &values);
            assert_eq!(undelta(&out), values);
        }
    }

    /// Definition levels read back from the hybrid encoding (bit width 1) after the 4-byte length.
    fn levels(bytes: &[u8], rows: usize) -> Vec<bool> {
        let length = u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
        let body = &bytes[4..4 + length];
        let mut at = 0;
        let mut out = Vec::new();
        while out.len() < rows {
            let header = read_varint(body, &mut at);
            if header & 1 == 1 {
                let values = unpack(body, &mut at, (header >> 1) as usize * 8, 1);
                out.extend(values.into_iter().map(|v| v == 1));
            } else {
                let value = body[at] == 1;
                at += 1;
                out.extend(std::iter::repeat_n(value, (header >> 1) as usize));
            }
        }
        out.truncate(rows);
        out
    }

    #[test]
    fn definition_levels_are_the_bitmap_from_any_row() {
        let bits = [0b1011_0110u8, 0xff, 0x00, 0b0101_0101];
        for offset in [0, 3, 8, 13] {
            for rows in [(0..10), (5..19), (1..2), (0..0)] {
                let want: Vec<bool> = rows.clone().map(|i| bit(&bits, offset + i)).collect();
                let mut out = Vec::new();
                let valid = valid_count(Some((&bits, offset)), rows.clone());
                assert_eq!(valid, want.iter().filter(|&&v| v).count());
                definition_levels(&mut out, Some((&bits, offset)), rows.clone(), valid);
                assert_eq!(levels(&out, rows.len()), want);
            }
        }
    }

    #[test]
    fn a_constant_chunk_is_a_dictionary_of_one_and_a_run() {
        let small = vec![9i64; 100];
        let large = vec![9i64; 1_000_000];
        let chunk =
            |values: &[i64]| encode_chunk(&Column { values: Values::Int64 { values, scale: 1 }, validity: None }, values.len(), false);
        let (a, b) = (chunk(&small), chunk(&large));
        assert_eq!(a.encodings, &[PLAIN, RLE, RLE_DICTIONARY]);
        // Eight pages of 131,072 rows against one: a page's header and its runs, tens of bytes each.
        assert!(b.bytes.len() < 8 * (a.bytes.len() + 16), "{} bytes", b.bytes.len());
        let moving: Vec<i64> = (0..100).collect();
        assert_eq!(chunk(&moving).encodings, &[DELTA_BINARY_PACKED, RLE]);
    }

    #[test]
    fn thrift_field_ids_beyond_fifteen_apart_take_the_long_form() {
        let mut t = Thrift::new();
        t.i32(1, -1);
        t.i64(20, 300);
        t.bool(21, true);
        assert_eq!(t.finish(), vec![0x15, 0x01, 0x06, 0x28, 0xd8, 0x04, 0x11, 0x00]);
    }

    #[test]
    fn a_file_is_framed_by_its_magic_and_footer_length() {
        let fields = vec![Field { name: "t".into(), kind: Kind::Timestamp, statistics: true }];
        let mut writer = FileWriter::new(Vec::new(), fields).unwrap();
        let values = [1i64, 2, 3];
        let chunk = encode_chunk(&Column { values: Values::Int64 { values: &values, scale: 1000 }, validity: None }, 3, true);
        assert_eq!(chunk.statistics, Some((Some((1000, 3000)), 0)));
        writer.write(3, vec![chunk]).unwrap();
        let file = writer.finish().unwrap();
        assert!(file.starts_with(b"PAR1") && file.ends_with(b"PAR1"));
        let footer = u32::from_le_bytes(file[file.len() - 8..file.len() - 4].try_into().unwrap()) as usize;
        assert!(footer > 0 && footer + 12 < file.len());
    }
}
