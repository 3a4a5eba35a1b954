//! An FTDC file: a plain concatenation of BSON documents
//! `{_id: Date, type: int, data: BinData | doc: {...}, count?: int}`.
//! A damaged region is reported and skipped by resynchronising on the next
//! plausible document, so everything intact around it is still read.

use std::ops::Range;

use crate::bson::{self, document_len, read_i32, Elements};

pub const TYPE_METADATA: i64 = 0;
pub const TYPE_METRIC_CHUNK: i64 = 1;
pub const TYPE_PERIODIC_METADATA: i64 = 2;

/// One top-level document of a file.
#[derive(Debug, Clone)]
pub struct Document {
    pub offset: usize,
    pub len: usize,
    pub doc_type: i64,
    pub id_ms: Option<i64>,
    /// Type 1: the BinData payload (length prefix plus zlib stream).
    pub data: Option<Range<usize>>,
    /// Types 0 and 2: the embedded `doc`.
    pub doc: Option<Range<usize>>,
    /// Type 2: the delta counter.
    pub count: Option<i64>,
}

/// Damage in one buffer: where, and what was skipped.
#[derive(Debug, Clone)]
pub struct Problem {
    pub offset: usize,
    pub message: String,
}

/// What kind of damage a read reports: each kind is a name of its own in Python (`ftdc.ProblemKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProblemKind {
    /// The file could not be read at all.
    Unreadable,
    /// The file holds no document.
    Empty,
    /// A region that is no document, skipped up to the next plausible one.
    Damaged,
    /// A document whose `type` FTDC does not define.
    UnknownType,
    /// A metric chunk that cannot be decoded whole.
    ChunkSkipped,
}

impl ProblemKind {
    pub fn name(self) -> &'static str {
        match self {
            ProblemKind::Unreadable => "unreadable",
            ProblemKind::Empty => "empty",
            ProblemKind::Damaged => "damaged",
            ProblemKind::UnknownType => "unknown type",
            ProblemKind::ChunkSkipped => "chunk skipped",
        }
    }
}

/// A problem of one file of a read, said as one line: "file: offset N: message" (or "file: message").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProblem {
    pub file: String,
    pub offset: Option<usize>,
    pub kind: ProblemKind,
    pub message: String,
}

impl FileProblem {
    pub fn at(file: &str, offset: usize, kind: ProblemKind, message: String) -> Self {
        FileProblem { file: file.to_string(), offset: Some(offset), kind, message }
    }

    /// A file that could not be read.
    pub fn unreadable(file: &str, e: &std::io::Error) -> Self {
        FileProblem { file: file.to_string(), offset: None, kind: ProblemKind::Unreadable, message: format!("cannot read: {e}") }
    }
}

impl std::fmt::Display for FileProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.offset {
            Some(offset) => write!(f, "{}: offset {offset}: {}", self.file, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

/// One input file, already read into memory.
pub struct Source {
    pub name: String,
    pub bytes: Vec<u8>,
    /// `metrics.interim`: its samples yield to archived copies.
    pub interim: bool,
}

/// Every document mongod writes starts with `_id` as a Date.
const ID_ELEMENT: &[u8] = b"\x09_id\x00";

/// The next offset after `from` that looks like the start of a document.
fn resync(buf: &[u8], from: usize) -> Option<usize> {
    let mut pos = from;
    while pos + 4 + ID_ELEMENT.len() <= buf.len() {
        let hit = buf[pos + 4..].windows(ID_ELEMENT.len()).position(|w| w == ID_ELEMENT)?;
        let start = pos + hit;
        if document_len(buf, start).is_ok() {
            return Some(start);
        }
        pos = start + 1;
    }
    None
}

/// Reads the envelope of every document; problems name their byte offset.
pub fn read_documents(buf: &[u8]) -> (Vec<Document>, Vec<Problem>) {
    let mut docs = Vec::new();
    let mut problems = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        // A zero length ends the data (the rest of the file is preallocation).
        if read_i32(buf, pos) == Some(0) {
            break;
        }
        let parsed = document_len(buf, pos).map_err(|e| e.message).and_then(|len| parse_envelope(buf, pos, len).map(|d| (len, d)));
        match parsed {
            Ok((len, doc)) => {
                docs.push(doc);
                pos += len;
            }
            Err(message) => {
                let next = resync(buf, pos + 1);
                let skipped = next.unwrap_or(buf.len()) - pos;
                let what = if next.is_some() { "skipped" } else { "ignored to end of file" };
                problems.push(Problem { offset: pos, message: format!("{message}; {skipped} bytes {what}") });
                match next {
                    Some(n) => pos = n,
                    None => break,
                }
            }
        }
    }
    (docs, problems)
}

fn parse_envelope(buf: &[u8], offset: usize, len: usize) -> Result<Document, String> {
    let mut doc = Document { offset, len, doc_type: -1, id_ms: None, data: None, doc: None, count: None };
    let mut have_type = false;
    for element in Elements::new(buf, offset, len) {
        let e = element.map_err(|e| e.message)?;
        match (e.key, e.etype) {
            (b"_id", bson::DATE) => doc.id_ms = Some(e.as_i64()),
            (b"type", _) => {
                doc.doc_type = e.as_integer().ok_or("`type` is not an integer")?;
                have_type = true;
            }
            (b"count", _) => doc.count = e.as_integer(),
            (b"data", bson::BINARY) => {
                let start = e.value_offset + 5;
                doc.data = Some(start..e.value_offset + e.value.len());
            }
            (b"doc", bson::DOCUMENT) => doc.doc = Some(e.value_offset..e.value_offset + e.value.len()),
            _ => {}
        }
    }
    if !have_type {
        return Err("document has no `type` field".into());
    }
    if doc.doc_type == TYPE_METRIC_CHUNK && doc.data.is_none() {
        return Err("metric chunk has no binary `data` field".into());
    }
    Ok(doc)
}

/// The documents of every source, and a problem for each damaged region,
/// unknown document type or empty file.
pub fn documents_of(sources: &[Source]) -> (Vec<Vec<Document>>, Vec<FileProblem>) {
    let mut problems = Vec::new();
    let docs = sources
        .iter()
        .map(|s| {
            let (docs, file_problems) = documents_of_source(s);
            problems.extend(file_problems);
            docs
        })
        .collect();
    (docs, problems)
}

/// One source's documents, and what of it was damaged, empty or of an unknown type.
pub fn documents_of_source(s: &Source) -> (Vec<Document>, Vec<FileProblem>) {
    let (docs, file_problems) = read_documents(&s.bytes);
    let mut problems = Vec::new();
    if docs.is_empty() && file_problems.is_empty() {
        problems.push(FileProblem {
            file: s.name.clone(),
            offset: None,
            kind: ProblemKind::Empty,
            message: "empty file, no FTDC documents".into(),
        });
    }
    problems.extend(file_problems.into_iter().map(|p| FileProblem::at(&s.name, p.offset, ProblemKind::Damaged, p.message)));
    for d in docs.iter().filter(|d| ![TYPE_METADATA, TYPE_METRIC_CHUNK, TYPE_PERIODIC_METADATA].contains(&d.doc_type)) {
        let message = format!("document of unknown type {} skipped", d.doc_type);
        problems.push(FileProblem::at(&s.name, d.offset, ProblemKind::UnknownType, message));
    }
    (docs, problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::envelope;

    #[test]
    fn resyncs_after_garbage() {
        let mut f = envelope(1, 10, b"abc");
        f.extend_from_slice(b"garbage!garbage!");
        f.extend(envelope(1, 20, b"defg"));
        let (docs, problems) = read_documents(&f);
        assert_eq!(docs.iter().map(|d| d.id_ms.unwrap()).collect::<Vec<_>>(), vec![10, 20]);
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].offset, envelope(1, 10, b"abc").len());
    }

    #[test]
    fn truncated_last_document_keeps_the_rest() {
        let mut f = envelope(1, 10, b"abc");
        let second = envelope(1, 20, b"defg");
        f.extend_from_slice(&second[..second.len() - 3]);
        let (docs, problems) = read_documents(&f);
        assert_eq!(docs.len(), 1);
        assert_eq!(problems.len(), 1);
    }
}
