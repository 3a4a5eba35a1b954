//! Raw BSON reading: iterate the elements of a document in byte order
//! without building a tree, so duplicate keys survive and nothing is
//! allocated per element. Every length is checked against the bytes present.

use std::fmt;

pub const DOUBLE: u8 = 0x01;
pub const STRING: u8 = 0x02;
pub const DOCUMENT: u8 = 0x03;
pub const ARRAY: u8 = 0x04;
pub const BINARY: u8 = 0x05;
pub const UNDEFINED: u8 = 0x06;
pub const OBJECT_ID: u8 = 0x07;
pub const BOOL: u8 = 0x08;
pub const DATE: u8 = 0x09;
pub const NULL: u8 = 0x0A;
pub const REGEX: u8 = 0x0B;
pub const DB_POINTER: u8 = 0x0C;
pub const JAVASCRIPT: u8 = 0x0D;
pub const SYMBOL: u8 = 0x0E;
pub const JAVASCRIPT_WITH_SCOPE: u8 = 0x0F;
pub const INT32: u8 = 0x10;
pub const TIMESTAMP: u8 = 0x11;
pub const INT64: u8 = 0x12;
pub const DECIMAL128: u8 = 0x13;
pub const MIN_KEY: u8 = 0xFF;
pub const MAX_KEY: u8 = 0x7F;

/// A structural problem at `offset` (relative to the buffer handed to the reader).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BsonError {
    pub offset: usize,
    pub message: String,
}

impl BsonError {
    pub fn new(offset: usize, message: impl Into<String>) -> Self {
        BsonError { offset, message: message.into() }
    }
}

impl fmt::Display for BsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "offset {}: {}", self.offset, self.message)
    }
}

pub fn read_i32(buf: &[u8], pos: usize) -> Option<i32> {
    buf.get(pos..pos.checked_add(4)?).map(|b| i32::from_le_bytes(b.try_into().unwrap()))
}

pub fn read_u32(buf: &[u8], pos: usize) -> Option<u32> {
    read_i32(buf, pos).map(|v| v as u32)
}

/// Length of the document starting at `pos`, checked to fit inside `buf`
/// and to end with the terminating NUL.
pub fn document_len(buf: &[u8], pos: usize) -> Result<usize, BsonError> {
    let len = read_i32(buf, pos).ok_or_else(|| BsonError::new(pos, "document length cut off"))?;
    if len < 5 {
        return Err(BsonError::new(pos, format!("document length {len} is below the minimum of 5")));
    }
    let len = len as usize;
    if pos + len > buf.len() {
        return Err(BsonError::new(pos, format!("document claims {len} bytes but only {} remain", buf.len() - pos)));
    }
    if buf[pos + len - 1] != 0 {
        return Err(BsonError::new(pos + len - 1, "document does not end with a NUL byte"));
    }
    Ok(len)
}

/// One element: its type byte, key bytes, and the value's bytes.
#[derive(Debug, Clone, Copy)]
pub struct Element<'a> {
    pub etype: u8,
    pub key: &'a [u8],
    pub value: &'a [u8],
    /// Offset of the value's first byte in the buffer.
    pub value_offset: usize,
}

impl<'a> Element<'a> {
    pub fn as_i64(&self) -> i64 {
        i64::from_le_bytes(self.value[..8].try_into().unwrap())
    }
    pub fn as_i32(&self) -> i32 {
        i32::from_le_bytes(self.value[..4].try_into().unwrap())
    }
    pub fn as_f64(&self) -> f64 {
        f64::from_le_bytes(self.value[..8].try_into().unwrap())
    }
    /// Integer value of an int32/int64 element.
    pub fn as_integer(&self) -> Option<i64> {
        match self.etype {
            INT32 => Some(self.as_i32() as i64),
            INT64 => Some(self.as_i64()),
            _ => None,
        }
    }
}

/// Iterator over the elements of one document. Yields an error once and then stops.
pub struct Elements<'a> {
    buf: &'a [u8],
    pos: usize,
    end: usize,
    failed: bool,
}

impl<'a> Elements<'a> {
    /// Elements of the document starting at `start`; its length must already be validated.
    pub fn new(buf: &'a [u8], start: usize, len: usize) -> Self {
        Elements { buf, pos: start + 4, end: start + len - 1, failed: false }
    }

    /// Validates the document at `start` and iterates its elements.
    pub fn of(buf: &'a [u8], start: usize) -> Result<Self, BsonError> {
        let len = document_len(buf, start)?;
        Ok(Self::new(buf, start, len))
    }

    fn next_element(&mut self) -> Result<Element<'a>, BsonError> {
        let buf = self.buf;
        let etype = buf[self.pos];
        let key_start = self.pos + 1;
        let nul = buf[key_start..self.end]
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| BsonError::new(key_start, "element key is not terminated"))?;
        let key = &buf[key_start..key_start + nul];
        let value_offset = key_start + nul + 1;
        let len = value_len(buf, value_offset, self.end, etype)?;
        self.pos = value_offset + len;
        Ok(Element { etype, key, value: &buf[value_offset..value_offset + len], value_offset })
    }
}

impl<'a> Iterator for Elements<'a> {
    type Item = Result<Element<'a>, BsonError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.end {
            return None;
        }
        let item = self.next_element();
        self.failed = item.is_err();
        Some(item)
    }
}

fn need(pos: usize, n: usize, end: usize, what: &str) -> Result<usize, BsonError> {
    if pos.checked_add(n).is_some_and(|e| e <= end) {
        Ok(n)
    } else {
        Err(BsonError::new(pos, format!("{what} runs past the end of its document")))
    }
}

fn string_len(buf: &[u8], pos: usize, end: usize) -> Result<usize, BsonError> {
    let n = read_i32(buf, pos).filter(|_| pos + 4 <= end).ok_or_else(|| BsonError::new(pos, "string length cut off"))?;
    if n < 1 {
        return Err(BsonError::new(pos, format!("string length {n} is invalid")));
    }
    need(pos, 4 + n as usize, end, "string")
}

fn cstring_len(buf: &[u8], pos: usize, end: usize) -> Result<usize, BsonError> {
    buf[pos.min(end)..end].iter().position(|&b| b == 0).map(|n| n + 1).ok_or_else(|| BsonError::new(pos, "C string is not terminated"))
}

/// Byte length of a value of type `etype` at `pos`, which must end by `end`.
fn value_len(buf: &[u8], pos: usize, end: usize, etype: u8) -> Result<usize, BsonError> {
    match etype {
        DOUBLE | DATE | TIMESTAMP | INT64 => need(pos, 8, end, "value"),
        INT32 => need(pos, 4, end, "value"),
        DECIMAL128 => need(pos, 16, end, "value"),
        OBJECT_ID => need(pos, 12, end, "value"),
        BOOL => need(pos, 1, end, "value"),
        UNDEFINED | NULL | MIN_KEY | MAX_KEY => Ok(0),
        STRING | JAVASCRIPT | SYMBOL => string_len(buf, pos, end),
        DOCUMENT | ARRAY | JAVASCRIPT_WITH_SCOPE => {
            let n = read_i32(buf, pos).filter(|_| pos + 4 <= end).ok_or_else(|| BsonError::new(pos, "embedded length cut off"))?;
            if n < 5 {
                return Err(BsonError::new(pos, format!("embedded length {n} is invalid")));
            }
            let n = need(pos, n as usize, end, "embedded document")?;
            if etype != JAVASCRIPT_WITH_SCOPE && buf[pos + n - 1] != 0 {
                return Err(BsonError::new(pos + n - 1, "embedded document does not end with NUL"));
            }
            Ok(n)
        }
        BINARY => {
            let n = read_i32(buf, pos).filter(|_| pos + 4 <= end).ok_or_else(|| BsonError::new(pos, "binary length cut off"))?;
            if n < 0 {
                return Err(BsonError::new(pos, format!("binary length {n} is invalid")));
            }
            need(pos, 5 + n as usize, end, "binary value")
        }
        REGEX => {
            let a = cstring_len(buf, pos, end)?;
            Ok(a + cstring_len(buf, pos + a, end)?)
        }
        DB_POINTER => {
            let s = string_len(buf, pos, end)?;
            Ok(s + need(pos + s, 12, end, "DBPointer")?)
        }
        other => Err(BsonError::new(pos.saturating_sub(1), format!("unknown BSON type 0x{other:02x}"))),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A document around already-encoded elements (for tests across the crate).
    pub(crate) fn doc(elements: &[u8]) -> Vec<u8> {
        let mut d = ((elements.len() + 5) as i32).to_le_bytes().to_vec();
        d.extend_from_slice(elements);
        d.push(0);
        d
    }

    #[test]
    fn iterates_in_order_with_duplicates() {
        let mut e = vec![INT32];
        e.extend_from_slice(b"a\0");
        e.extend_from_slice(&7i32.to_le_bytes());
        e.push(INT32);
        e.extend_from_slice(b"a\0");
        e.extend_from_slice(&8i32.to_le_bytes());
        let d = doc(&e);
        let vals: Vec<i32> = Elements::of(&d, 0).unwrap().map(|x| x.unwrap().as_i32()).collect();
        assert_eq!(vals, vec![7, 8]);
    }

    #[test]
    fn rejects_lying_lengths() {
        let mut e = vec![STRING];
        e.extend_from_slice(b"s\0");
        e.extend_from_slice(&1000i32.to_le_bytes());
        e.extend_from_slice(b"x\0");
        let d = doc(&e);
        let r: Vec<_> = Elements::of(&d, 0).unwrap().collect();
        assert_eq!(r.len(), 1);
        assert!(r[0].is_err());
        assert!(document_len(&[10, 0, 0, 0, 0], 0).is_err());
        assert!(document_len(&[3, 0, 0, 0, 0], 0).is_err());
    }
}
