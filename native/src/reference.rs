//! Opening a chunk payload: its header and the metric values of its
//! reference document, checked against metricCount. Works on a prefix of
//! the payload, so readers that need only the reference stop inflating early.

use crate::chunk::{parse_header, Header};
use crate::metrics::{metric_values, ValueSink};

pub fn open_reference(payload: &[u8]) -> Result<(Header, ValueSink), String> {
    let header = parse_header(payload).map_err(|e| format!("payload offset {}: {}", e.offset, e.message))?;
    let values = metric_values(&payload[..header.ref_len]).map_err(|e| format!("reference document: {e}"))?;
    if values.values.len() != header.metric_count as usize {
        return Err(format!("reference document has {} metrics but metricCount is {}", values.values.len(), header.metric_count));
    }
    Ok((header, values))
}
