//! The metrics a read kept as delta bytes (`Options::keep`), reduced after it: each metric's values, or its
//! per-second rates, to their least and greatest in each column of a time axis (the explorer's pixel columns).
//!
//! The explorer draws every metric of a node (thousands); decoding them into a frame beside the analysis' would take
//! gigabytes for a week, and decoding the files again inflates every chunk a second time. The read that gives the
//! analysis its frame keeps, of every other metric, only the bytes its delta walk already found; here each metric is
//! decoded alone (one column of the read's rows at a time, the metrics in parallel) and folded into its extremes.

use std::collections::HashMap;
use std::sync::Arc;

use rayon::prelude::*;

use super::output::ColumnPlan;
use super::place::Group;
use super::prepare::Prepared;
use crate::levels::{levels, Levels};

/// No selected metric of a chunk gives this column.
const NONE: u32 = u32::MAX;
/// Most metrics a worker reduces together, group by group (`Kept::reduce_then`): a week's explore took 0.66 s with
/// 64, 0.70 s with 16 and 0.87 s one at a time; their extremes (two per column of the axis, for values and rates,
/// 5 MB for 64 metrics of 2,400 columns) stay in the cache.
const BLOCK: usize = 64;

pub struct Kept {
    chunks: Vec<Prepared>,
    groups: Vec<Group>,
    plan: ColumnPlan,
    /// Per chunk (shared by the chunks of one layout), per column of `plan`: the chunk's selected metric giving it.
    slots: Vec<Arc<Vec<u32>>>,
    rows: usize,
}

/// The read's rows on an axis: the column of each row (negative: the row is not drawn, and no rate is taken across
/// it: the next drawn row's step is from the drawn row before it), whether the interval ending at each row can be
/// rated, and its length in seconds.
pub struct Rows<'a> {
    pub columns: usize,
    pub column_of: &'a [i32],
    pub valid: &'a [bool],
    pub interval_s: &'a [f64],
}

/// How a metric is drawn: as recorded, as a per-second rate, or as a rate if it rose and never fell over an interval
/// that can be rated (a cumulative counter that no table names).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Shown {
    Values,
    Rates,
    RatesIfCounting,
}

/// One metric reduced on an axis: the least and greatest per column of what is drawn (NaN where a column holds none;
/// missing, NaN and infinite values are passed over), and whether that is its rates.
#[derive(Debug, PartialEq)]
pub struct Reduced {
    pub lows: Vec<f64>,
    pub highs: Vec<f64>,
    pub rated: bool,
}

impl Reduced {
    /// As the explorer's page stores it (`levels::levels`): each column's least, then its greatest.
    pub fn levels(&self) -> Option<Levels> {
        levels(self.lows.iter().zip(&self.highs).flat_map(|(&low, &high)| [low, high]))
    }
}

impl Kept {
    pub fn new(chunks: Vec<Prepared>, groups: Vec<Group>, plan: ColumnPlan, rows: usize) -> Self {
        let mut shared: HashMap<*const Vec<(usize, usize)>, Arc<Vec<u32>>> = HashMap::new();
        let slots = plan
            .chunk_columns
            .iter()
            .map(|columns| {
                shared
                    .entry(Arc::as_ptr(columns))
                    .or_insert_with(|| {
                        let mut slots = vec![NONE; plan.names.len()];
                        columns.iter().for_each(|&(s, col)| slots[col] = s as u32);
                        Arc::new(slots)
                    })
                    .clone()
            })
            .collect();
        Kept { chunks, groups, plan, slots, rows }
    }

    /// The metrics kept, as the frame would name them, and their kinds.
    pub fn names(&self) -> (&[String], &[u8]) {
        (&self.plan.names, &self.plan.kinds)
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The selected metric of chunk `c` that gives column `col`.
    fn slot(&self, c: usize, col: usize) -> Option<usize> {
        Some(self.slots[c][col]).filter(|&s| s != NONE).map(|s| s as usize)
    }

    /// Decodes chunk `c`'s values of its selected column `s` into `out` (its rows).
    fn decode(&self, c: usize, s: usize, out: &mut [i64]) {
        match self.chunks[c].zero[s] {
            true => out.fill(0),
            false => self.chunks[c].decode(s, out),
        }
    }

    /// Group `g`'s values of column `col`, in its rows' order.
    fn group_values<'b>(&self, g: &Group, col: usize, buffers: &'b mut Buffers) -> GroupValues<'b> {
        let Buffers { scratch, values, present } = buffers;
        let Some(order) = &g.order else {
            let c = g.chunks[0];
            let Some(s) = self.slot(c, col) else { return GroupValues::Absent };
            if self.chunks[c].flat[s] {
                return GroupValues::Flat(self.chunks[c].first(s));
            }
            // Every row is decoded over what the buffer held (zeroing it first cost a pass per metric and chunk).
            if values.len() < g.rows {
                values.resize(g.rows, 0);
            }
            self.decode(c, s, &mut values[..g.rows]);
            return GroupValues::Decoded { values: &values[..g.rows], present: None };
        };
        // Overlapping chunks, as the frame's decode takes them: each into its part of one scratch buffer, then
        // gathered in time order; the rows of a chunk that lacks the column hold none.
        let slots: Vec<Option<usize>> = g.chunks.iter().map(|&c| self.slot(c, col)).collect();
        if slots.iter().all(Option::is_none) {
            return GroupValues::Absent;
        }
        let starts = g.scratch_starts(&self.chunks);
        scratch.clear();
        scratch.resize(*starts.last().unwrap(), 0);
        for (j, (&c, slot)) in g.chunks.iter().zip(&slots).enumerate() {
            if let Some(s) = *slot {
                self.decode(c, s, &mut scratch[starts[j]..starts[j + 1]]);
            }
        }
        values.clear();
        values.resize(g.rows, 0);
        present.clear();
        present.resize(g.rows, false);
        for (i, &(j, r)) in order.iter().enumerate() {
            if slots[j as usize].is_some() {
                (values[i], present[i]) = (scratch[starts[j as usize] + r as usize], true);
            }
        }
        GroupValues::Decoded { values, present: Some(present) }
    }

    /// Each of `metrics` (a column of `names` and how it is shown) reduced on `rows`, the metrics in parallel.
    pub fn reduce(&self, metrics: &[(usize, Shown)], rows: &Rows<'_>) -> Vec<Reduced> {
        self.reduce_then(metrics, rows, |reduced| reduced)
    }

    /// `reduce`, each metric's reduction handed to `then` by the worker that made it (a metric's floats are held until
    /// then, not every metric's at once).
    ///
    /// A worker takes up to BLOCK metrics at a time and goes through the groups once for all of them. Taken one metric
    /// at a time, every group's facts of that metric (whether it is flat, its first value, where its deltas lie) were
    /// a cache miss each, since each chunk keeps its own, and so were its delta bytes. Neighbouring metrics lie
    /// side by side in each, so a block reads them a cache line at a time: a week's 2,312 metrics over 2,016 chunks
    /// are 4.7 million such visits.
    pub fn reduce_then<T: Send>(&self, metrics: &[(usize, Shown)], rows: &Rows<'_>, then: impl Fn(Reduced) -> T + Sync) -> Vec<T> {
        let cells = cells(&self.groups, rows);
        // Blocks enough for every worker to take several (a few metrics asked for are still spread over the cores).
        let block = (metrics.len() / (4 * rayon::current_num_threads())).clamp(1, BLOCK);
        metrics
            .par_chunks(block)
            .map_init(Buffers::default, |buffers, block| {
                let mut reducers: Vec<Reducer> = block.iter().map(|&(_, shown)| Reducer::new(rows, shown)).collect();
                for (g, cells) in self.groups.iter().zip(&cells) {
                    if cells.is_empty() {
                        continue;
                    }
                    for (reducer, &(col, _)) in reducers.iter_mut().zip(block) {
                        self.reduce_group(reducer, g, cells, col, buffers);
                    }
                }
                reducers.into_iter().map(|reducer| then(reducer.finished())).collect::<Vec<T>>()
            })
            .flatten_iter()
            .collect()
    }

    /// Group `g`'s `cells` of metric `col` taken into its `reducer`.
    fn reduce_group(&self, reducer: &mut Reducer, g: &Group, cells: &[Cell], col: usize, buffers: &mut Buffers) {
        match self.group_values(g, col, buffers) {
            GroupValues::Absent => reducer.before = None,
            GroupValues::Flat(value) => reducer.flat(cells, value),
            GroupValues::Decoded { values, present } => {
                for cell in cells {
                    let at = cell.rows.start - g.offset..cell.rows.end - g.offset;
                    let Some(present) = present.filter(|present| !present[at.clone()].iter().all(|&has| has)) else {
                        reducer.cell(cell, &values[at]);
                        continue;
                    };
                    for i in cell.rows.clone() {
                        match present[i - g.offset] {
                            true => reducer.row(cell.column, i, values[i - g.offset]),
                            false => reducer.before = None,
                        }
                    }
                }
            }
        }
    }
}

/// A metric's values in one group of rows.
enum GroupValues<'a> {
    /// No chunk of the group holds the metric.
    Absent,
    /// One chunk, every value this one (its deltas all 0): nothing to decode.
    Flat(i64),
    /// `present`: whether each row holds a value; None when every row does (the group is one chunk).
    Decoded { values: &'a [i64], present: Option<&'a [bool]> },
}

/// A worker's buffers, reused from metric to metric (a fresh column of a week's rows per metric cost a page fault
/// per 4 kB).
#[derive(Default)]
struct Buffers {
    scratch: Vec<i64>,
    values: Vec<i64>,
    present: Vec<bool>,
}

/// Consecutive drawn rows of one group in one column of the axis.
struct Cell {
    column: usize,
    rows: std::ops::Range<usize>,
    /// Whether the interval ending at a row after the first can be rated.
    rated_after_first: bool,
}

/// The cells of each group, in row order: what every metric is reduced over.
fn cells(groups: &[Group], rows: &Rows<'_>) -> Vec<Vec<Cell>> {
    groups
        .iter()
        .map(|g| {
            let mut cells: Vec<Cell> = Vec::new();
            let mut open = false;
            for i in g.offset..g.offset + g.rows {
                let Ok(column) = usize::try_from(rows.column_of[i]) else {
                    open = false;
                    continue;
                };
                match cells.last_mut() {
                    Some(cell) if open && cell.column == column => {
                        cell.rows.end = i + 1;
                        cell.rated_after_first |= rows.valid[i];
                    }
                    _ => cells.push(Cell { column, rows: i..i + 1, rated_after_first: false }),
                }
                open = true;
            }
            cells
        })
        .collect()
}

/// Running least and greatest per column; infinities until a value counts.
struct Extremes {
    lows: Vec<f64>,
    highs: Vec<f64>,
}

impl Extremes {
    fn new(columns: usize) -> Self {
        Extremes { lows: vec![f64::INFINITY; columns], highs: vec![f64::NEG_INFINITY; columns] }
    }

    fn take(&mut self, column: usize, value: f64) {
        // Comparisons, not `f64::min` and `max` (which also order NaN): no value taken is NaN, nor -0.0 (values are
        // integers, rates a step of 0 or more over an interval that can be rated, a positive one: `derived.prepare`).
        if value.is_finite() {
            if value < self.lows[column] {
                self.lows[column] = value;
            }
            if value > self.highs[column] {
                self.highs[column] = value;
            }
        }
    }

    /// NaN where no value counted (as `extremes::run_extremes` gives it).
    fn finished(mut self, rated: bool) -> Reduced {
        for (low, high) in self.lows.iter_mut().zip(self.highs.iter_mut()) {
            if !low.is_finite() {
                (*low, *high) = (f64::NAN, f64::NAN);
            }
        }
        Reduced { lows: self.lows, highs: self.highs, rated }
    }
}

/// One metric's reduction, row by drawn row. A rate is as polars takes `increase(x) / interval_s`: the step from the
/// drawn row before (both holding a value), where the interval can be rated and the step is not negative, over the
/// interval's seconds. It rose: a step above 0 anywhere; it fell: a step below 0 where rated.
struct Reducer<'r> {
    rows: &'r Rows<'r>,
    drawn: Extremes,
    rates: Extremes,
    rose: bool,
    fell: bool,
    /// The value of the drawn row before, None when it holds none.
    before: Option<i64>,
    /// What is drawn in the end: `cell` leaves out what that does not read (the rates of a metric shown as recorded, or
    /// of one that fell). `row` takes every row in full whatever it is (the row-by-row reference of the tests).
    shown: Shown,
}

impl<'r> Reducer<'r> {
    fn new(rows: &'r Rows<'r>, shown: Shown) -> Self {
        Reducer {
            rows,
            drawn: Extremes::new(rows.columns),
            rates: Extremes::new(rows.columns),
            rose: false,
            fell: false,
            before: None,
            shown,
        }
    }

    /// Whether the rates (and the rises and falls) still matter: not for a metric shown as recorded, nor for one that
    /// would be shown as rates only if it never fell and has fallen.
    fn wants_rates(&self) -> bool {
        match self.shown {
            Shown::Values => false,
            Shown::Rates => true,
            Shown::RatesIfCounting => !self.fell,
        }
    }

    /// Drawn row `i`, in `column`, holding `value`.
    fn row(&mut self, column: usize, i: usize, value: i64) {
        self.drawn.take(column, value as f64);
        if let Some(previous) = self.before {
            let step = value.wrapping_sub(previous);
            let valid = self.rows.valid[i];
            self.rose |= step > 0;
            self.fell |= valid && step < 0;
            if valid && step >= 0 {
                self.rates.take(column, step as f64 / self.rows.interval_s[i]);
            }
        }
        self.before = Some(value);
    }

    /// The rows of `cell`, each holding a value (`values`, in order): as `row` takes them one by one, each step
    /// but the first within the cell, its extremes taken as integers (converting to a float keeps their order).
    fn cell(&mut self, cell: &Cell, values: &[i64]) {
        let (first, column) = (cell.rows.start, cell.column);
        self.row(column, first, values[0]);
        let (low, high) = values.iter().fold((i64::MAX, i64::MIN), |(low, high), &v| (low.min(v), high.max(v)));
        self.drawn.take(column, low as f64);
        self.drawn.take(column, high as f64);
        if !self.wants_rates() {
            self.before = values.last().copied();
            return;
        }
        let (valid, interval_s) = (&self.rows.valid[first + 1..cell.rows.end], &self.rows.interval_s[first + 1..cell.rows.end]);
        let (mut rose, mut fell) = (false, false);
        let (mut low, mut high) = (f64::INFINITY, f64::NEG_INFINITY);
        for ((pair, &valid), &seconds) in values.windows(2).zip(valid).zip(interval_s) {
            let step = pair[1].wrapping_sub(pair[0]);
            rose |= step > 0;
            fell |= valid && step < 0;
            if valid && step >= 0 {
                let rate = step as f64 / seconds;
                if rate.is_finite() {
                    (low, high) = (if rate < low { rate } else { low }, if rate > high { rate } else { high });
                }
            }
        }
        (self.rose, self.fell) = (self.rose | rose, self.fell | fell);
        self.rates.take(column, low);
        self.rates.take(column, high);
        self.before = values.last().copied();
    }

    /// The `cells` of a group that holds `value` in every row: the first row steps from the row before the group, each
    /// after it by 0 (a rate of 0 where the interval can be rated), as `row` takes them one by one.
    fn flat(&mut self, cells: &[Cell], value: i64) {
        let Some((first, rest)) = cells.split_first() else { return };
        self.row(first.column, first.rows.start, value);
        let rates = self.wants_rates();
        if rates && first.rated_after_first {
            self.rates.take(first.column, 0.0);
        }
        for cell in rest {
            self.drawn.take(cell.column, value as f64);
            if rates && (cell.rated_after_first || self.rows.valid[cell.rows.start]) {
                self.rates.take(cell.column, 0.0);
            }
        }
    }

    fn finished(self) -> Reduced {
        match self.shown {
            Shown::Values => self.drawn.finished(false),
            Shown::Rates => self.rates.finished(true),
            Shown::RatesIfCounting if self.rose && !self.fell => self.rates.finished(true),
            Shown::RatesIfCounting => self.drawn.finished(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{read, Options, HELD};
    use crate::select::Selection;
    use crate::testing::{chunk, sample, seconds, source};

    fn rows<'a>(column_of: &'a [i32], valid: &'a [bool], interval_s: &'a [f64], columns: usize) -> Rows<'a> {
        Rows { columns, column_of, valid, interval_s }
    }

    /// One column reduced row by row, every row in turn: what `Kept::reduce` must give by its cells and flat chunks.
    fn reduce(values: &[i64], present: &[bool], shown: Shown, rows: &Rows<'_>) -> Reduced {
        let mut reducer = Reducer::new(rows, shown);
        for (i, (&value, &has)) in values.iter().zip(present).enumerate() {
            let Ok(column) = usize::try_from(rows.column_of[i]) else { continue };
            match has {
                true => reducer.row(column, i, value),
                false => reducer.before = None,
            }
        }
        reducer.finished()
    }

    /// Column `col` of what `kept` holds, in the read's rows, and whether each row holds a value.
    fn column(kept: &Kept, col: usize) -> (Vec<i64>, Vec<bool>) {
        let (mut values, mut present) = (vec![0; kept.rows], vec![false; kept.rows]);
        let mut buffers = Buffers::default();
        for g in &kept.groups {
            let rows = g.offset..g.offset + g.rows;
            match kept.group_values(g, col, &mut buffers) {
                GroupValues::Absent => {}
                GroupValues::Flat(value) => {
                    values[rows.clone()].fill(value);
                    present[rows].fill(true);
                }
                GroupValues::Decoded { values: v, present: p } => {
                    values[rows.clone()].copy_from_slice(v);
                    match p {
                        Some(p) => present[rows].copy_from_slice(p),
                        None => present[rows].fill(true),
                    }
                }
            }
        }
        (values, present)
    }

    fn files() -> Vec<crate::file::Source> {
        let narrow: Vec<Vec<u8>> = (0..3).map(|i| sample(1000 + 1000 * i, &[("b", 7)])).collect();
        // a falls (no counter: its rates are not needed past here), then moves again in a later chunk; n counts on.
        let falling: Vec<Vec<u8>> = (0..4).map(|i| sample(20_000 + 1000 * i, &[("a", 100 - 3 * i), ("b", 7), ("n", i * i)])).collect();
        let rising: Vec<Vec<u8>> = (0..6).map(|i| sample(30_000 + 1000 * i, &[("a", 40 + i * i), ("b", 7), ("n", 9 + i * i)])).collect();
        vec![
            source("a", &[chunk(&narrow, 1000), chunk(&seconds(4000, 4, 50), 4000), chunk(&seconds(9000, 6, 0), 9000)], false),
            // Overlaps the first file in time: its rows interleave.
            source("b", &[chunk(&seconds(5500, 3, 90), 5500)], false),
            source("c", &[chunk(&falling, 20_000), chunk(&rising, 30_000)], false),
        ]
    }

    fn options(selection: Selection, keep: bool) -> Options {
        Options { selection, start: None, end: None, time_field: "start".into(), max_values: 1 << 20, catalog: false, keep }
    }

    #[test]
    fn values_and_rates_are_reduced_per_column_and_a_counter_is_told_by_its_steps() {
        let values = [10, 12, 15, 15, 20, 30];
        let present = [true; 6];
        let column_of = [0, 0, 1, 1, 2, 2];
        let valid = [false, true, true, true, true, true];
        let interval_s = [f64::NAN, 1.0, 1.0, 2.0, 1.0, 2.0];
        let on = rows(&column_of, &valid, &interval_s, 3);
        let counted = reduce(&values, &present, Shown::RatesIfCounting, &on);
        assert_eq!(counted, Reduced { lows: vec![2.0, 0.0, 5.0], highs: vec![2.0, 3.0, 5.0], rated: true });
        let drawn = reduce(&values, &present, Shown::Values, &on);
        assert_eq!((drawn.lows, drawn.highs, drawn.rated), (vec![10.0, 15.0, 20.0], vec![12.0, 15.0, 30.0], false));
        // A fall over an interval that can be rated: no counter, drawn as recorded.
        let fallen = reduce(&[5, 4, 6, 7, 8, 9], &present, Shown::RatesIfCounting, &on);
        assert!(!fallen.rated);
        // A fall across an interval that cannot be rated (a restart) keeps it a counter, with no rate there.
        let restarted = reduce(
            &[5, 6, 1, 2, 3, 4],
            &present,
            Shown::RatesIfCounting,
            &rows(&column_of, &[true, true, false, true, true, true], &interval_s, 3),
        );
        assert_eq!((restarted.rated, restarted.lows.clone()), (true, vec![1.0, 0.5, 0.5]));
    }

    #[test]
    fn a_missing_value_breaks_the_step_and_a_row_off_the_axis_is_stepped_over() {
        let column_of = [0, 0, -1, 1, 1];
        let valid = [false, true, true, true, true];
        let interval_s = [f64::NAN, 1.0, 1.0, 4.0, 1.0];
        let on = rows(&column_of, &valid, &interval_s, 2);
        // Row 2 is not drawn: row 3's step is from row 1 (8 over 4 s), and row 2's value counts nowhere.
        let skipped = reduce(&[0, 2, 1000, 10, 11], &[true; 5], Shown::Rates, &on);
        assert_eq!((skipped.lows, skipped.highs), (vec![2.0, 1.0], vec![2.0, 2.0]));
        // Row 3 lacks a value: neither its step nor the next is taken.
        let missing = reduce(&[0, 2, 3, 0, 11], &[true, true, true, false, true], Shown::Rates, &on);
        assert!(missing.lows[1].is_nan() && missing.highs[1].is_nan());
        assert_eq!(reduce(&[0, 2, 3, 0, 11], &[false; 5], Shown::Values, &on).lows.iter().filter(|v| v.is_nan()).count(), 2);
    }

    #[test]
    fn a_kept_metric_decodes_to_the_values_the_frame_gives_it_overlaps_and_gaps_included() {
        let whole = read(files(), &options(Selection::all(), false), HELD);
        let one = read(files(), &options(Selection::new(&["serverStatus.b".to_string()]).unwrap(), true), HELD);
        assert_eq!(one.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["serverStatus.b"]);
        let kept = one.kept.as_ref().expect("kept");
        assert_eq!(kept.rows(), whole.time.len());
        for (i, c) in whole.columns.iter().enumerate() {
            let col = kept.names().0.iter().position(|n| *n == c.name).unwrap();
            let (values, present) = column(kept, col);
            let rows = whole.time.len();
            let stored = match c.offset {
                Some(o) => whole.values.as_slice()[o..o + rows].to_vec(),
                None => whole.zeros[..rows].to_vec(),
            };
            let has = |r: usize| c.validity.as_ref().is_none_or(|v| v[r / 8] >> (r % 8) & 1 == 1);
            for r in 0..rows {
                assert_eq!(present[r], has(r), "column {i} row {r}");
                if present[r] {
                    assert_eq!(values[r], stored[r], "column {i} row {r}");
                }
            }
        }
    }

    #[test]
    fn kept_metrics_reduce_as_their_columns_row_by_row() {
        // Flat chunks (b holds 7 throughout), a chunk lacking a, an overlap, rows
        // off the axis and intervals that cannot be rated: the cells and flat chunks give what every row in turn gives.
        let one = read(files(), &options(Selection::new(&[]).unwrap(), true), HELD);
        let kept = one.kept.as_ref().expect("kept");
        let n = kept.rows();
        for (k, columns) in [(1usize, 1usize), (2, 3), (3, 4), (5, 7)] {
            let column_of: Vec<i32> = (0..n).map(|i| if i % 7 == k { -1 } else { ((i / k) % columns) as i32 }).collect();
            let column_of: Vec<i32> = column_of
                .iter()
                .scan(0, |top, &c| {
                    Some(if c < 0 {
                        c
                    } else {
                        *top = c.max(*top);
                        *top
                    })
                })
                .collect();
            let valid: Vec<bool> = (0..n).map(|i| i > 0 && i % 5 != k).collect();
            let interval_s: Vec<f64> = (0..n).map(|i| 0.5 + (i % 3) as f64).collect();
            let on = rows(&column_of, &valid, &interval_s, columns);
            let metrics: Vec<(usize, Shown)> =
                (0..kept.names().0.len()).flat_map(|m| [(m, Shown::Values), (m, Shown::Rates), (m, Shown::RatesIfCounting)]).collect();
            for (&(m, shown), got) in metrics.iter().zip(kept.reduce(&metrics, &on)) {
                let (values, present) = column(kept, m);
                let want = reduce(&values, &present, shown, &on);
                let same = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| x == y || x.is_nan() && y.is_nan());
                assert!(same(&got.lows, &want.lows) && same(&got.highs, &want.highs), "metric {m} {shown:?} on {k}, {columns}");
                assert_eq!(got.rated, want.rated);
            }
        }
    }
}
