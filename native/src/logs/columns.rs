//! Column builders laid out as Arrow buffers (int64, bool and string_view
//! values with validity bitmaps) and the two tables made of them, slow_ops
//! and events.

/// int64 values with one validity flag per row.
#[derive(Default)]
pub struct Ints {
    pub(super) values: Vec<i64>,
    valid: Vec<bool>,
}

impl Ints {
    fn with_capacity(n: usize) -> Self {
        Ints { values: Vec::with_capacity(n), valid: Vec::with_capacity(n) }
    }
    pub(super) fn push(&mut self, v: Option<i64>) {
        self.values.push(v.unwrap_or(0));
        self.valid.push(v.is_some());
    }
    /// Row `row`'s value, set after the row was pushed.
    pub(super) fn set(&mut self, row: usize, v: Option<i64>) {
        self.values[row] = v.unwrap_or(0);
        self.valid[row] = v.is_some();
    }
    fn finish(mut self) -> Column {
        // The column is handed to Python as it is (`python_logs.rs`): room reserved and not used would stay held.
        self.values.shrink_to_fit();
        Column::Int { validity: bitmap(&self.valid), values: self.values }
    }
}

#[derive(Default)]
pub struct Bools {
    values: Vec<bool>,
    valid: Vec<bool>,
}

impl Bools {
    fn with_capacity(n: usize) -> Self {
        Bools { values: Vec::with_capacity(n), valid: Vec::with_capacity(n) }
    }
    pub(super) fn push(&mut self, v: Option<bool>) {
        self.values.push(v.unwrap_or(false));
        self.valid.push(v.is_some());
    }
    fn finish(self) -> Column {
        Column::Bool { validity: bitmap(&self.valid), bits: bitmap(&self.values).unwrap_or_else(|| all_set(self.values.len())) }
    }
}

/// UTF-8 strings as an Arrow string_view column, polars' own string layout,
/// so polars takes the buffers as they are instead of copying every string:
/// a 16-byte view per row (length, then the string itself up to 12 bytes, else
/// its first 4 bytes, buffer index and offset) and the longer strings in data
/// buffers, a new one before offsets would pass i32.
#[derive(Default)]
pub struct Strs {
    views: Vec<u128>,
    buffers: Vec<Vec<u8>>,
    valid: Vec<bool>,
}

const INLINE_BYTES: usize = 12;
pub(super) const MAX_VIEW_BYTES: usize = i32::MAX as usize;

impl Strs {
    fn with_capacity(n: usize) -> Self {
        Strs { views: Vec::with_capacity(n), buffers: Vec::new(), valid: Vec::with_capacity(n) }
    }

    /// A string longer than a view can address (2 GB) is null.
    pub(super) fn push(&mut self, v: Option<&str>) {
        let v = v.filter(|s| s.len() <= MAX_VIEW_BYTES);
        let view = v.map_or(0, |s| self.view_of(s.as_bytes()));
        self.push_view(v.map(|_| view));
    }

    /// A view this column made before (the same string again), or null.
    pub(super) fn push_view(&mut self, view: Option<u128>) {
        self.views.push(view.unwrap_or(0));
        self.valid.push(view.is_some());
    }

    /// The view of `s` (at most MAX_VIEW_BYTES), storing it when it is not inline.
    pub(super) fn view_of(&mut self, s: &[u8]) -> u128 {
        let mut view = [0u8; 16];
        view[..4].copy_from_slice(&(s.len() as u32).to_le_bytes());
        if s.len() <= INLINE_BYTES {
            view[4..4 + s.len()].copy_from_slice(s);
            return u128::from_le_bytes(view);
        }
        if self.buffers.last().is_none_or(|b| b.len() + s.len() > MAX_VIEW_BYTES) {
            self.buffers.push(Vec::new());
        }
        let index = self.buffers.len() - 1;
        let buffer = &mut self.buffers[index];
        view[4..8].copy_from_slice(&s[..4]);
        view[8..12].copy_from_slice(&(index as u32).to_le_bytes());
        view[12..].copy_from_slice(&(buffer.len() as u32).to_le_bytes());
        buffer.extend_from_slice(s);
        u128::from_le_bytes(view)
    }

    /// Row `row`'s string, set after the row was pushed (its bytes are stored again).
    pub(super) fn set(&mut self, row: usize, v: &str) {
        if v.len() <= MAX_VIEW_BYTES {
            self.views[row] = self.view_of(v.as_bytes());
            self.valid[row] = true;
        }
    }

    fn finish(mut self) -> Column {
        // As `Ints::finish`: a data buffer grows by doubling, and would keep up to half its room unused.
        self.views.shrink_to_fit();
        self.buffers.iter_mut().for_each(Vec::shrink_to_fit);
        Column::Str { validity: bitmap(&self.valid), views: self.views, buffers: self.buffers }
    }
}

/// A finished column, laid out as Arrow buffers (LSB-first bitmaps).
pub enum Column {
    Int { values: Vec<i64>, validity: Option<Vec<u8>> },
    Bool { bits: Vec<u8>, validity: Option<Vec<u8>> },
    Str { views: Vec<u128>, buffers: Vec<Vec<u8>>, validity: Option<Vec<u8>> },
}

/// The bitmap of `flags`, None when every flag is set (no validity buffer needed).
fn bitmap(flags: &[bool]) -> Option<Vec<u8>> {
    if flags.iter().all(|&f| f) {
        return None;
    }
    let mut bits = vec![0u8; flags.len().div_ceil(8)];
    for (i, _) in flags.iter().enumerate().filter(|(_, &f)| f) {
        bits[i / 8] |= 1 << (i % 8);
    }
    Some(bits)
}

fn all_set(n: usize) -> Vec<u8> {
    vec![0xff; n.div_ceil(8)]
}

pub struct Table {
    pub rows: usize,
    pub columns: Vec<(&'static str, Column)>,
}

macro_rules! table {
    ($(#[$meta:meta])* $name:ident { $($col:ident: $kind:ident),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Default)]
        pub struct $name {
            $(pub $col: $kind,)+
        }

        impl $name {
            /// Room for `rows` rows, so columns do not grow (and fault pages) twice.
            pub(super) fn with_capacity(rows: usize) -> Self {
                $name { $($col: $kind::with_capacity(rows),)+ }
            }

            pub(super) fn finish(self) -> Table {
                let rows = self.line.values.len();
                // Python reads `rows` values from every column's buffers
                // (json_lines._batch): a shorter column would be read past its end.
                $(assert_eq!(self.$col.valid.len(), rows, concat!("rows of column ", stringify!($col)));)+
                Table { rows, columns: vec![$((stringify!($col), self.$col.finish()),)+] }
            }
        }
    };
}

table!(
    /// The slow_ops columns that do not need other files (`columns.SLOW_OPS_BEFORE_JOINS`)
    /// but `started` and `file`; `ts` is UTC milliseconds, `t` the timestamp text
    /// where it is not in a form read here (polars reads it then).
    SlowColumns {
        ts: Ints, t: Strs, component: Strs, connection: Strs, op_type: Strs, command: Strs, write_statement: Bools,
        ns: Strs, db: Strs, coll: Strs, app_name: Strs,
        command_json: Strs, originating_command_json: Strs, shape: Strs, plan_summary: Strs, plan_kind: Strs,
        keys_examined: Ints, docs_examined: Ints, nreturned: Ints, num_yields: Ints,
        query_hash: Strs, plan_cache_key: Strs, query_shape_hash: Strs,
        ok: Bools, err_name: Strs, err_code: Ints, reslen: Ints, write_conflicts: Ints,
        lock_wait_micros: Ints, flow_control_micros: Ints,
        cache_wait_micros: Ints, schema_lock_wait_micros: Ints, handle_lock_wait_micros: Ints,
        bytes_read: Ints, read_micros: Ints, bytes_written: Ints, write_micros: Ints,
        execution_queued_micros: Ints, execution_admissions: Ints, ingress_queued_micros: Ints,
        working_ms: Ints, cpu_nanos: Ints, remote: Strs, duration_ms: Ints,
        truncated: Strs, truncated_size: Strs, line: Ints,
    }
);

table!(
    /// Every other line; `attr` is the attributes' JSON text for the ids asked for.
    EventColumns { t: Strs, severity: Strs, component: Strs, id: Ints, ctx: Strs, msg: Strs, attr: Strs, line: Ints }
);

table!(
    /// Legacy text lines other than slow operations: the envelope and the typed
    /// columns (`events.TYPED_COLUMNS`); `id` is always null; `ts` and `t` as in
    /// `SlowColumns`.
    TextEventColumns {
        ts: Ints, t: Strs, severity: Strs, component: Strs, id: Ints, ctx: Strs, msg: Strs,
        kind: Strs, duration_ms: Ints, connection_count: Ints, remote: Strs, driver: Strs, app_name: Strs,
        new_state: Strs, old_state: Strs, version: Strs, host: Strs, text: Strs, line: Ints,
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "rows of column t")]
    fn finish_rejects_a_column_of_another_length() {
        let mut events = EventColumns::with_capacity(1);
        events.line.push(Some(1));
        events.finish();
    }
}
