//! Phase 2: the output columns, decoded in parallel per group into one arena.

use std::collections::HashMap;
use std::sync::Arc;

use rayon::prelude::*;

use super::place::Group;
use super::prepare::{Layout, Prepared};
use super::Column;
use crate::arena::Arena;
use crate::metrics::KIND_INT;

/// Output columns in first-seen order, and per chunk the output column of
/// each selected metric it gives. A column whose kinds disagree between chunks is Int.
pub struct ColumnPlan {
    pub names: Vec<String>,
    pub kinds: Vec<u8>,
    /// Per column: 0 in every chunk that has it.
    zero: Vec<bool>,
    /// Per chunk: `(selected metric, column)` of each metric it gives.
    pub chunk_columns: Vec<Arc<Vec<(usize, usize)>>>,
}

/// The plan of the frame's columns (the metrics asked for: `Layout::output`), or with `kept` of every metric kept.
pub fn plan_columns(chunks: &[Prepared], kept: bool) -> ColumnPlan {
    let mut column_of: HashMap<String, usize> = HashMap::new();
    let mut names: Vec<String> = Vec::new();
    let mut kinds: Vec<u8> = Vec::new();
    let mut per_layout: HashMap<*const Layout, Arc<Vec<(usize, usize)>>> = HashMap::new();
    let mut chunk_columns = Vec::with_capacity(chunks.len());
    for p in chunks {
        let columns = per_layout.entry(Arc::as_ptr(&p.layout)).or_insert_with(|| {
            let layout = &p.layout;
            let columns = layout.selected.iter().enumerate().filter(|&(s, _)| kept || layout.output[s]).map(|(s, &m)| {
                let (name, kind) = (&layout.names()[m], layout.kinds()[m]);
                let id = *column_of.entry(name.clone()).or_insert_with(|| {
                    names.push(name.clone());
                    kinds.push(kind);
                    names.len() - 1
                });
                if kinds[id] != kind {
                    kinds[id] = KIND_INT;
                }
                (s, id)
            });
            Arc::new(columns.collect())
        });
        chunk_columns.push(columns.clone());
    }
    let mut zero = vec![true; names.len()];
    for (p, columns) in chunks.iter().zip(&chunk_columns) {
        columns.iter().for_each(|&(s, col)| zero[col] &= p.zero[s]);
    }
    ColumnPlan { names, kinds, zero, chunk_columns }
}

#[derive(Clone, Copy)]
struct SharedOut(*mut i64);
// Safety: each group writes only its own row range, and ranges are disjoint.
unsafe impl Send for SharedOut {}
unsafe impl Sync for SharedOut {}

/// Decodes every group into a fresh arena holding `rows` values per column
/// that is not 0 throughout; the others are not decoded and take no memory.
/// Building the frame, not decoding, bounds a read of every metric: each new
/// page costs a fault and zeroing, and 3 in 4 metrics of a real node stay 0.
pub fn decode(groups: &[Group], chunks: &[Prepared], plan: ColumnPlan, rows: usize) -> (Vec<Column>, Arena) {
    let mut stored = 0;
    let offsets: Vec<Option<usize>> = plan
        .zero
        .iter()
        .map(|&zero| {
            (!zero).then(|| {
                stored += 1;
                (stored - 1) * rows
            })
        })
        .collect();
    let values = Arena::new(rows * stored);
    // Safety: a stored column owns values[offset .. offset + rows].
    let outs: Vec<Option<SharedOut>> = offsets.iter().map(|o| o.map(|o| SharedOut(unsafe { values.as_mut_ptr().add(o) }))).collect();
    groups.par_iter().for_each(|g| decode_group(g, chunks, &plan.chunk_columns, &outs));
    let validity = validity_bitmaps(groups, chunks, &plan.chunk_columns, plan.names.len(), rows);
    let columns = plan
        .names
        .into_iter()
        .zip(plan.kinds)
        .zip(validity)
        .zip(offsets)
        .map(|(((name, kind), validity), offset)| Column { name, kind, offset, validity })
        .collect();
    (columns, values)
}

/// Decodes a group's stored columns into its rows of the output buffers.
fn decode_group(g: &Group, chunks: &[Prepared], chunk_columns: &[Arc<Vec<(usize, usize)>>], outs: &[Option<SharedOut>]) {
    // Safety: rows g.offset..g.offset+g.rows belong to this group alone.
    let output = |col: usize| outs[col].map(|out| unsafe { std::slice::from_raw_parts_mut(out.0.add(g.offset), g.rows) });
    let Some(order) = &g.order else {
        let c = g.chunks[0];
        for &(s, col) in chunk_columns[c].iter() {
            if let Some(out) = output(col) {
                chunks[c].decode(s, out);
            }
        }
        return;
    };
    // Overlapping chunks: decode each into its slice of one scratch buffer,
    // then gather the output column in order (sequential writes, not a
    // strided scatter). Rows of chunks lacking a column stay unwritten: null.
    let starts = g.scratch_starts(chunks);
    let gather: Vec<u32> = order.iter().map(|&(j, r)| (starts[j as usize] + r as usize) as u32).collect();
    let mut scratch = vec![0i64; *starts.last().unwrap()];
    let mut feeding: HashMap<usize, Vec<(usize, usize)>> = HashMap::new();
    for (j, &c) in g.chunks.iter().enumerate() {
        for &(s, col) in chunk_columns[c].iter().filter(|&&(_, col)| outs[col].is_some()) {
            feeding.entry(col).or_default().push((j, s));
        }
    }
    let mut has = vec![false; g.chunks.len()];
    for (col, sources) in feeding {
        for &(j, s) in &sources {
            chunks[g.chunks[j]].decode(s, &mut scratch[starts[j]..starts[j + 1]]);
        }
        let out = output(col).expect("only stored columns are fed");
        if sources.len() == g.chunks.len() {
            for (value, &at) in out.iter_mut().zip(&gather) {
                *value = scratch[at as usize];
            }
        } else {
            has.fill(false);
            sources.iter().for_each(|&(j, _)| has[j] = true);
            for ((value, &at), &(j, _)) in out.iter_mut().zip(&gather).zip(order) {
                if has[j as usize] {
                    *value = scratch[at as usize];
                }
            }
        }
    }
}

/// A bitmap per column that some rows lack; None for complete columns.
fn validity_bitmaps(
    groups: &[Group],
    chunks: &[Prepared],
    chunk_columns: &[Arc<Vec<(usize, usize)>>],
    columns: usize,
    rows: usize,
) -> Vec<Option<Vec<u8>>> {
    let mut present = vec![0usize; columns];
    for g in groups {
        let mut contributed = vec![0usize; g.chunks.len()];
        g.sources(chunks).for_each(|(j, _)| contributed[j] += 1);
        for (j, n) in contributed.into_iter().enumerate() {
            chunk_columns[g.chunks[j]].iter().for_each(|&(_, col)| present[col] += n);
        }
    }
    let mut bitmaps: Vec<Option<Vec<u8>>> =
        present.iter().map(|&n| if n == rows { None } else { Some(vec![0u8; rows.div_ceil(8)]) }).collect();
    for g in groups {
        // Per chunk of the group, its columns that need a bitmap.
        let incomplete: Vec<Vec<usize>> = g
            .chunks
            .iter()
            .map(|&c| chunk_columns[c].iter().map(|&(_, col)| col).filter(|&col| bitmaps[col].is_some()).collect())
            .collect();
        if incomplete.iter().all(Vec::is_empty) {
            continue;
        }
        for (i, (j, _)) in g.sources(chunks).enumerate() {
            let row = g.offset + i;
            for &col in &incomplete[j] {
                bitmaps[col].as_mut().unwrap()[row / 8] |= 1 << (row % 8);
            }
        }
    }
    bitmaps
}
