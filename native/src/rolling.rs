//! Quantiles of time windows, for the latency spikes' baselines (a latency's median and quartiles over the
//! 10 minutes before each sample).
//!
//! polars computes `rolling_quantile_by` through a generic window machinery: 50-65 ms a column for a day at 1 s,
//! three quantiles of three classes a node. Here the window's values are kept in order in one vector: a value
//! enters or leaves by bisection and a move of the values after it (a 10-minute window at 1 s holds 600), and
//! every quantile of a window is then read at its rank, so one pass gives them all. The window of row i is the
//! rows whose time is in [t_i - window, t_i) (polars' `closed="left"`), missing values left out; the quantiles
//! follow polars' `linear` and `nearest` methods to the bit, so the answers are the same as before.

/// How a quantile between two ranks is taken (polars' `interpolation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// low + (q(n - 1) - ⌊q(n - 1)⌋) × (high - low)
    Linear,
    /// the value at rank round(q(n - 1))
    Nearest,
}

/// The `q`-quantile by `method` of `size` values in order, the k-th smallest being `kth(k)` (polars' formulas).
fn quantile(size: u32, q: f64, method: Method, kth: impl Fn(u32) -> f64) -> f64 {
    let at = (size - 1) as f64 * q;
    match method {
        Method::Nearest => kth((at.round() as u32).min(size - 1)),
        Method::Linear => {
            let (low, high) = (at.floor() as u32, at.ceil() as u32);
            let below = kth(low.min(size - 1));
            if high == low {
                below
            } else {
                (at - low as f64) * (kth(high.min(size - 1)) - below) + below
            }
        }
    }
}

/// What `rolling_quantiles` gives for one column.
#[derive(Debug, PartialEq)]
pub struct Rolling {
    /// The number of values in each row's window.
    pub count: Vec<u32>,
    /// Each quantile of each row's window (NaN where the window holds none).
    pub windows: Vec<Vec<f64>>,
    /// Each quantile of all the column's values (NaN when it has none).
    pub overall: Vec<f64>,
}

/// For each row, the number of values in its window and each of `quantiles`, and each quantile of the whole
/// column. `times` must be in ascending order; `values[i]` counts only where `valid[i]`.
pub fn rolling_quantiles(times: &[i64], values: &[f64], valid: &[bool], window: i64, quantiles: &[(f64, Method)]) -> Rolling {
    let n = times.len().min(values.len()).min(valid.len());
    let mut held: Vec<f64> = Vec::new(); // the window's values, in order
    let (mut count, mut out) = (vec![0u32; n], vec![vec![f64::NAN; n]; quantiles.len()]);
    let (mut first, mut end) = (0usize, 0usize);
    for i in 0..n {
        let (t, start) = (times[i], times[i].saturating_sub(window));
        // Rows before this time enter; rows before the window's start leave (first <= end: start < t).
        while end < n && times[end] < t {
            if valid[end] {
                held.insert(held.partition_point(|v| v.total_cmp(&values[end]).is_lt()), values[end]);
            }
            end += 1;
        }
        while first < end && times[first] < start {
            if valid[first] {
                held.remove(held.partition_point(|v| v.total_cmp(&values[first]).is_lt()));
            }
            first += 1;
        }
        count[i] = held.len() as u32;
        if held.is_empty() {
            continue;
        }
        for (column, &(q, method)) in out.iter_mut().zip(quantiles) {
            column[i] = quantile(held.len() as u32, q, method, |k| held[k as usize]);
        }
    }
    let mut all: Vec<f64> = (0..n).filter(|&i| valid[i]).map(|i| values[i]).collect();
    all.sort_unstable_by(f64::total_cmp);
    let overall = quantiles
        .iter()
        .map(|&(q, method)| if all.is_empty() { f64::NAN } else { quantile(all.len() as u32, q, method, |k| all[k as usize]) })
        .collect();
    Rolling { count, windows: out, overall }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each window sorted by hand.
    fn plain(times: &[i64], values: &[f64], valid: &[bool], window: i64, q: f64, method: Method) -> Vec<f64> {
        (0..times.len())
            .map(|i| {
                let mut w: Vec<f64> = (0..times.len())
                    .filter(|&j| valid[j] && times[j] >= times[i] - window && times[j] < times[i])
                    .map(|j| values[j])
                    .collect();
                w.sort_by(f64::total_cmp);
                if w.is_empty() {
                    return f64::NAN;
                }
                let at = (w.len() - 1) as f64 * q;
                match method {
                    Method::Nearest => w[at.round() as usize],
                    Method::Linear => (at - at.floor()) * (w[at.ceil() as usize] - w[at.floor() as usize]) + w[at.floor() as usize],
                }
            })
            .collect()
    }

    #[test]
    fn windows_match_each_window_sorted_by_hand() {
        // Repeated times, gaps, missing values, ties.
        let times = [0, 1, 1, 2, 5, 6, 6, 7, 8, 20, 21, 22, 23, 24];
        let values = [5.0, 1.0, 3.0, 3.0, 2.0, 8.0, 7.0, 0.5, 4.0, 6.0, 6.0, 1.0, 9.0, 2.0];
        let valid = [true, true, false, true, true, true, true, false, true, true, true, true, true, true];
        let mut all: Vec<f64> = (0..times.len()).filter(|&j| valid[j]).map(|j| values[j]).collect();
        all.sort_by(f64::total_cmp);
        for window in [1, 3, 4, 10, 100] {
            for q in [0.0, 0.25, 0.5, 0.75, 1.0] {
                for method in [Method::Linear, Method::Nearest] {
                    let got = rolling_quantiles(&times, &values, &valid, window, &[(q, method)]);
                    let want = plain(&times, &values, &valid, window, q, method);
                    for (i, want) in want.iter().enumerate() {
                        let value = got.windows[0][i];
                        let same = value.to_bits() == want.to_bits() || (value.is_nan() && want.is_nan());
                        assert!(same, "row {i} window {window} q {q} {method:?}");
                        assert_eq!(got.count[i] == 0, want.is_nan());
                    }
                    let whole = quantile(all.len() as u32, q, method, |k| all[k as usize]);
                    assert_eq!(got.overall[0].to_bits(), whole.to_bits());
                }
            }
        }
    }

    #[test]
    fn empty_and_all_missing_inputs_give_empty_windows() {
        let none = rolling_quantiles(&[], &[], &[], 10, &[(0.5, Method::Linear)]);
        assert!(none.count.is_empty() && none.windows == vec![Vec::<f64>::new()] && none.overall[0].is_nan());
        let missing = rolling_quantiles(&[1, 2], &[1.0, 2.0], &[false, false], 10, &[(0.5, Method::Linear)]);
        assert_eq!(missing.count, vec![0, 0]);
        assert!(missing.windows[0].iter().all(|v| v.is_nan()) && missing.overall[0].is_nan());
    }
}
