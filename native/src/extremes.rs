//! The least and greatest value of each run of rows, column by column: the report's figures and the explorer's
//! series at one minimum and one maximum per pixel column of a time axis.
//!
//! numpy did this as one `reduceat` over a matrix of every column: polars first copied the columns into that
//! matrix as floats (a week's 460 MB), and the reduction then read it again. Here each column is read once, where
//! it lies (Arrow arrays: values and an optional validity bitmap; a column may be several, as polars holds the
//! result of a `diff` in two), the columns in parallel. The rolling quantiles read their columns the same way
//! (`floats`, `integers`).

use std::borrow::Cow;

/// A chunk's values: floats, or integers read as floats (`as f64`, as polars casts them).
pub enum Values<'a> {
    Float(&'a [f64]),
    Integer(&'a [i64]),
}

/// One chunk of a column as Arrow lays out a Float64 or Int64 array: `values` from its first row, and its validity
/// bitmap (bit i of byte i / 8, least significant first) with the array's `offset` into it; no bitmap when every row
/// is valid.
pub struct Chunk<'a> {
    pub values: Values<'a>,
    pub validity: Option<(&'a [u8], usize)>,
}

impl Chunk<'_> {
    pub fn len(&self) -> usize {
        match self.values {
            Values::Float(values) => values.len(),
            Values::Integer(values) => values.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The extremes of `rows` of this chunk (`extremes`).
    fn extremes(&self, rows: std::ops::Range<usize>) -> (f64, f64) {
        match (&self.values, self.validity) {
            (Values::Float(values), None) => extremes(&values[rows], |v| v, |_| true),
            (Values::Integer(values), None) => extremes(&values[rows], |v| v as f64, |_| true),
            (Values::Float(values), Some(bits)) => extremes(&values[rows.clone()], |v| v, valid(bits, rows.start)),
            (Values::Integer(values), Some(bits)) => extremes(&values[rows.clone()], |v| v as f64, valid(bits, rows.start)),
        }
    }
}

/// A column held as `chunks` one after the other, as the rolling windows read it: its values as floats (integers
/// `as f64`, as polars casts them; where they lie when the column is one chunk of floats) and whether each row counts.
pub fn floats<'a>(chunks: &[Chunk<'a>]) -> (Cow<'a, [f64]>, Vec<bool>) {
    let valid = chunks
        .iter()
        .flat_map(|chunk| {
            let counts = chunk.validity.map(|bits| valid(bits, 0));
            (0..chunk.len()).map(move |i| counts.as_ref().is_none_or(|counts| counts(i)))
        })
        .collect();
    let values = match chunks {
        [Chunk { values: Values::Float(values), .. }] => Cow::Borrowed(*values),
        _ => Cow::Owned(
            chunks
                .iter()
                .flat_map(|chunk| match chunk.values {
                    Values::Float(values) => values.to_vec(),
                    Values::Integer(values) => values.iter().map(|&v| v as f64).collect(),
                })
                .collect(),
        ),
    };
    (values, valid)
}

/// A column of integers without nulls held as `chunks` (times): where they lie when it is one chunk; None when a chunk
/// holds floats or missing values.
pub fn integers<'a>(chunks: &[Chunk<'a>]) -> Option<Cow<'a, [i64]>> {
    let parts: Option<Vec<&'a [i64]>> = chunks
        .iter()
        .map(|chunk| match (&chunk.values, chunk.validity) {
            (Values::Integer(values), None) => Some(*values),
            _ => None,
        })
        .collect();
    match parts?.as_slice() {
        [one] => Some(Cow::Borrowed(*one)),
        parts => Some(Cow::Owned(parts.concat())),
    }
}

/// Whether row `from + i` is valid, by the validity bitmap `(bits, offset)`.
fn valid((bits, offset): (&[u8], usize), from: usize) -> impl Fn(usize) -> bool + '_ {
    move |i| {
        let at = offset + from + i;
        bits[at >> 3] >> (at & 7) & 1 == 1
    }
}

/// For each run of rows, `starts[k]..starts[k + 1]` (the last run to the column's end), of a column held as
/// `chunks` one after the other, the least and the greatest finite valid value (NaN when the run holds none: missing,
/// NaN and infinite values are passed over). `starts` must ascend from 0. Of 0 and -0, either may be given.
pub fn run_extremes(chunks: &[Chunk<'_>], starts: &[usize]) -> (Vec<f64>, Vec<f64>) {
    let (mut lows, mut highs) = (vec![f64::INFINITY; starts.len()], vec![f64::NEG_INFINITY; starts.len()]);
    let mut first = 0;
    for chunk in chunks {
        let end = first + chunk.len();
        // The runs this chunk's rows fall in: from the one holding its first row.
        let mut k = starts.partition_point(|&s| s <= first).saturating_sub(1);
        while k < starts.len() && starts[k] < end {
            let rows = starts[k].max(first) - first..starts.get(k + 1).map_or(end, |&next| next.min(end)) - first;
            let (low, high) = chunk.extremes(rows);
            (lows[k], highs[k]) = (lows[k].min(low), highs[k].max(high));
            k += 1;
        }
        first = end;
    }
    // Only counted values are finite: infinite extremes mean none counted.
    for (low, high) in lows.iter_mut().zip(highs.iter_mut()) {
        if !low.is_finite() {
            (*low, *high) = (f64::NAN, f64::NAN);
        }
    }
    (lows, highs)
}

/// Lanes of running extremes: each `min` waits on the one before it, so one pair would make the loop wait on its own
/// chain; four side by side let it run at the pace of its reads.
const LANES: usize = 4;

/// The least and greatest of `values` (through `float`) whose `valid(i)` holds and that are finite; infinities when
/// none is. A value that does not count becomes one that cannot win, and the extremes are taken by `min` and `max`:
/// no branch to mispredict in a run of noise (branches made this 1.7 times as slow, one pair of extremes 2 times).
fn extremes<T: Copy>(values: &[T], float: impl Fn(T) -> f64, valid: impl Fn(usize) -> bool) -> (f64, f64) {
    let (mut low, mut high) = ([f64::INFINITY; LANES], [f64::NEG_INFINITY; LANES]);
    let take = |low: &mut f64, high: &mut f64, i: usize, value: T| {
        let value = float(value);
        let counts = valid(i) & value.is_finite();
        *low = low.min(if counts { value } else { f64::INFINITY });
        *high = high.max(if counts { value } else { f64::NEG_INFINITY });
    };
    let groups = values.chunks_exact(LANES);
    let rest = groups.remainder();
    for (g, group) in groups.enumerate() {
        for lane in 0..LANES {
            take(&mut low[lane], &mut high[lane], g * LANES + lane, group[lane]);
        }
    }
    for (j, &value) in rest.iter().enumerate() {
        take(&mut low[j], &mut high[j], values.len() - rest.len() + j, value);
    }
    (low.into_iter().fold(f64::INFINITY, f64::min), high.into_iter().fold(f64::NEG_INFINITY, f64::max))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each run's extremes taken by sorting its finite valid values.
    fn sorted(values: &[f64], valid: &[bool], starts: &[usize]) -> (Vec<f64>, Vec<f64>) {
        let ends: Vec<usize> = starts.iter().skip(1).copied().chain([values.len()]).collect();
        starts
            .iter()
            .zip(ends)
            .map(|(&a, b)| {
                let mut run: Vec<f64> = (a..b).filter(|&i| valid[i] && values[i].is_finite()).map(|i| values[i]).collect();
                run.sort_by(f64::total_cmp);
                (run.first().copied().unwrap_or(f64::NAN), run.last().copied().unwrap_or(f64::NAN))
            })
            .unzip()
    }

    fn bitmap(valid: &[bool], offset: usize) -> Vec<u8> {
        let mut bits = vec![0u8; (valid.len() + offset).div_ceil(8)];
        for (i, &ok) in valid.iter().enumerate() {
            if ok {
                bits[(i + offset) / 8] |= 1 << ((i + offset) % 8);
            }
        }
        bits
    }

    fn same(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
    }

    #[test]
    fn a_column_of_chunks_reads_as_its_floats_and_rows_that_count() {
        let (first, second) = ([1.5, f64::NAN, -2.0], [7i64, -3]);
        let bits = bitmap(&[true, false, true], 5);
        let chunks = [
            Chunk { values: Values::Float(&first), validity: Some((&bits, 5)) },
            Chunk { values: Values::Integer(&second), validity: None },
        ];
        let (values, valid) = floats(&chunks);
        assert!(matches!(values, Cow::Owned(_)) && same(&values, &[1.5, f64::NAN, -2.0, 7.0, -3.0]));
        assert_eq!(valid, [true, false, true, true, true]);
        // One chunk of floats is read where it lies.
        let (values, valid) = floats(&chunks[..1]);
        assert!(matches!(values, Cow::Borrowed(_)) && valid == [true, false, true]);
        assert!(floats(&[]).0.is_empty());
    }

    #[test]
    fn times_are_integers_without_missing_values() {
        let (a, b) = ([1i64, 2], [5i64]);
        let whole = [Chunk { values: Values::Integer(&a), validity: None }, Chunk { values: Values::Integer(&b), validity: None }];
        assert_eq!(integers(&whole).as_deref(), Some(&[1, 2, 5][..]));
        assert!(matches!(integers(&whole[..1]), Some(Cow::Borrowed(_))));
        let bits = bitmap(&[true, true], 0);
        assert!(integers(&[Chunk { values: Values::Integer(&a), validity: Some((&bits, 0)) }]).is_none());
        assert!(integers(&[Chunk { values: Values::Float(&[1.0]), validity: None }]).is_none());
    }

    #[test]
    fn runs_give_their_finite_valid_extremes() {
        let values = [3.0, f64::NAN, -1.0, f64::INFINITY, 7.0, 2.0, f64::NEG_INFINITY, f64::NAN, 5.0, -4.0, 0.5];
        let valid = [true, true, true, true, false, true, true, true, true, false, true];
        for starts in [vec![0], vec![0, 3, 6, 8], vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10], vec![0, 6, 7]] {
            let want = sorted(&values, &valid, &starts);
            for offset in [0, 3, 8, 13] {
                let bits = bitmap(&valid, offset);
                let column = [Chunk { values: Values::Float(&values), validity: Some((&bits, offset)) }];
                let got = run_extremes(&column, &starts);
                assert!(same(&got.0, &want.0) && same(&got.1, &want.1), "starts {starts:?} offset {offset}: {got:?} != {want:?}");
            }
            let all = vec![true; values.len()];
            let got = run_extremes(&[Chunk { values: Values::Float(&values), validity: None }], &starts);
            let want = sorted(&values, &all, &starts);
            assert!(same(&got.0, &want.0) && same(&got.1, &want.1));
        }
    }

    #[test]
    fn a_run_without_a_finite_valid_value_is_nan() {
        let values = [f64::NAN, f64::INFINITY, 1.0];
        let bits = bitmap(&[true, true, false], 0);
        let (lows, highs) = run_extremes(&[Chunk { values: Values::Float(&values), validity: Some((&bits, 0)) }], &[0]);
        assert!(lows[0].is_nan() && highs[0].is_nan());
    }

    #[test]
    fn a_column_in_chunks_gives_what_it_gives_whole() {
        let values: Vec<f64> = (0..40).map(|i| ((i * 37) % 23) as f64 - 11.0).collect();
        let valid: Vec<bool> = (0..40).map(|i| i % 7 != 3).collect();
        let starts = [0, 5, 6, 13, 21, 22, 39];
        let bits = bitmap(&valid, 0);
        let whole = run_extremes(&[Chunk { values: Values::Float(&values), validity: Some((&bits, 0)) }], &starts);
        for cuts in [vec![1], vec![5], vec![6, 7, 8], vec![13, 30], vec![39], vec![0, 0, 20]] {
            // Each chunk with its own bitmap, the later ones at an offset into theirs.
            let edges: Vec<usize> = [0].into_iter().chain(cuts.iter().copied()).chain([40]).collect();
            let bitmaps: Vec<Vec<u8>> = edges.windows(2).enumerate().map(|(c, w)| bitmap(&valid[w[0]..w[1]], c)).collect();
            let chunks: Vec<Chunk> = edges
                .windows(2)
                .zip(&bitmaps)
                .enumerate()
                .map(|(c, (w, bits))| Chunk { values: Values::Float(&values[w[0]..w[1]]), validity: Some((bits.as_slice(), c)) })
                .collect();
            let got = run_extremes(&chunks, &starts);
            assert!(same(&got.0, &whole.0) && same(&got.1, &whole.1), "cuts {cuts:?}: {got:?} != {whole:?}");
        }
    }

    #[test]
    fn integers_are_read_as_floats() {
        let values = [i64::MAX, -3, 9_007_199_254_740_993, 0];
        let bits = bitmap(&[true, true, true, false], 0);
        let (lows, highs) = run_extremes(&[Chunk { values: Values::Integer(&values), validity: Some((&bits, 0)) }], &[0, 2]);
        assert_eq!((lows, highs), (vec![-3.0, 9_007_199_254_740_993_i64 as f64], vec![i64::MAX as f64, 9_007_199_254_740_993_i64 as f64]));
    }
}
