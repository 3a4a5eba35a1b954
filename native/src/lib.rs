//! Native core of ftdc-analyze: FTDC bytes in, int64 columns out.
//!
//! `bson` reads raw documents, `file` splits a file into documents, `chunk`
//! inflates a metric chunk, `metrics` turns a reference document into metric
//! names and values, `varint` decodes the delta stream, `decode` and
//! `catalog` work across many files, `encode` writes chunks back. `logs`
//! decodes JSON mongod log lines into columns. `rolling` takes quantiles of
//! time windows for the analyses' baselines, `extremes` the least and greatest
//! value of runs of rows for the report's figures, `levels` a series at the
//! explorer's 16-bit levels.

pub mod arena;
pub mod bson;
pub mod cache;
pub mod catalog;
pub mod chunk;
pub mod decode;
pub mod encode;
pub mod extremes;
pub mod file;
pub mod levels;
pub mod logs;
pub mod metrics;
pub mod parquet_write;
pub mod reference;
pub mod rolling;
pub mod select;
#[cfg(test)]
mod testing;
pub mod varint;

#[cfg(feature = "python")]
mod python;
#[cfg(feature = "python")]
mod python_arrow;
#[cfg(feature = "python")]
mod python_bytes;
#[cfg(feature = "python")]
mod python_encode;
#[cfg(feature = "python")]
mod python_logs;
#[cfg(feature = "python")]
mod python_parquet;
