//! FTDC files built in memory, as mongod writes them, for the tests of the modules that read many
//! files (`decode`, `catalog`) and of those that split one (`file`).

use std::io::Write;

use flate2::{write::ZlibEncoder, Compression};

use crate::bson::{self, tests::doc};
use crate::encode::ChunkEncoder;
use crate::file::{Source, TYPE_METRIC_CHUNK};

/// One element: its type, its key and its value's bytes.
pub fn element(etype: u8, key: &str, value: &[u8]) -> Vec<u8> {
    let mut e = vec![etype];
    e.extend_from_slice(key.as_bytes());
    e.push(0);
    e.extend_from_slice(value);
    e
}

/// A top-level FTDC document `{_id: Date(id), type, data: BinData(payload)}`.
pub fn envelope(doc_type: i32, id: i64, payload: &[u8]) -> Vec<u8> {
    let mut binary = (payload.len() as i32).to_le_bytes().to_vec();
    binary.push(0);
    binary.extend_from_slice(payload);
    doc(&[
        element(bson::DATE, "_id", &id.to_le_bytes()),
        element(bson::INT32, "type", &doc_type.to_le_bytes()),
        element(bson::BINARY, "data", &binary),
    ]
    .concat())
}

/// A sample `{start: Date(t), serverStatus: {name: Int64(value), ...}}`.
pub fn sample(t: i64, metrics: &[(&str, i64)]) -> Vec<u8> {
    let status: Vec<u8> = metrics.iter().flat_map(|(name, v)| element(bson::INT64, name, &v.to_le_bytes())).collect();
    doc(&[element(bson::DATE, "start", &t.to_le_bytes()), element(bson::DOCUMENT, "serverStatus", &doc(&status))].concat())
}

/// One metric chunk of `samples` (which share a schema), its `_id` the first sample's time.
pub fn chunk(samples: &[Vec<u8>], id: i64) -> Vec<u8> {
    chunk_of(&payload(samples), id)
}

/// The inflated payload of a chunk of `samples`: reference, counts, deltas.
pub fn payload(samples: &[Vec<u8>]) -> Vec<u8> {
    let mut encoder = ChunkEncoder::new(&samples[0]).unwrap();
    for s in &samples[1..] {
        assert!(encoder.push(s).unwrap(), "the samples of one chunk share a schema");
    }
    encoder.payload()
}

/// A metric chunk document around `payload`, whatever it holds.
pub fn chunk_of(payload: &[u8], id: i64) -> Vec<u8> {
    let mut zlib = ZlibEncoder::new(Vec::new(), Compression::default());
    zlib.write_all(payload).unwrap();
    let mut data = (payload.len() as u32).to_le_bytes().to_vec();
    data.extend(zlib.finish().unwrap());
    envelope(TYPE_METRIC_CHUNK as i32, id, &data)
}

/// A file of these documents.
pub fn source(name: &str, documents: &[Vec<u8>], interim: bool) -> Source {
    Source { name: name.to_string(), bytes: documents.concat(), interim }
}

/// `count` samples one second apart from `t0`, with `a` counting up from `a0` and `b` constant.
pub fn seconds(t0: i64, count: usize, a0: i64) -> Vec<Vec<u8>> {
    (0..count as i64).map(|i| sample(t0 + 1000 * i, &[("a", a0 + i), ("b", 7)])).collect()
}
