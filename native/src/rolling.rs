//! Quantiles of time windows, for the latency spikes' baselines (a latency's median and quartiles over the
//! 10 minutes before each sample).
//!
//! polars computes `rolling_quantile_by` through a generic window machinery: 50-65 ms a column for a day at 1 s,
//! three quantiles of three classes a node. Here the window's values are kept in order in one vector: as the
//! window moves, the value that leaves and the one that enters are found by bisection (of integer keys in the
//! values' total order: a sixth faster than comparing the values) and the values between them move by one place
//! (a 10-minute window at 1 s holds 600), and every quantile of a window is then read at its rank, so one pass
//! gives them all. A range of rows starts from its first window sorted afresh, so a column's
//! rows can be cut into ranges taken in parallel. The window of row i is the rows whose time is in
//! [t_i - window, t_i) (polars' `closed="left"`), missing values left out; the quantiles follow polars' `linear`
//! and `nearest` methods to the bit, so the answers are the same as before.

/// How a quantile between two ranks is taken (polars' `interpolation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// low + (q(n - 1) - ⌊q(n - 1)⌋) × (high - low)
    Linear,
    /// the value at rank round(q(n - 1))
    Nearest,
}

/// Where the `q`-quantile by `method` of `size` values in order is read (polars' formulas): the ranks below and
/// above it and how far between them it lies. A window's size seldom changes from one row to the next, so its
/// ranks are worked out once per size, not once per row.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Rank {
    low: u32,
    high: u32,
    between: f64,
}

impl Rank {
    fn of(size: u32, q: f64, method: Method) -> Rank {
        let at = (size - 1) as f64 * q;
        let (low, high) = match method {
            Method::Nearest => {
                let k = (at.round() as u32).min(size - 1);
                (k, k)
            }
            // low + (q(n - 1) - ⌊q(n - 1)⌋) × (high - low)
            Method::Linear => ((at.floor() as u32).min(size - 1), (at.ceil() as u32).min(size - 1)),
        };
        Rank { low, high, between: at - at.floor() }
    }

    /// The quantile, the k-th smallest value being `kth(k)`.
    fn read(self, kth: impl Fn(u32) -> f64) -> f64 {
        let below = kth(self.low);
        if self.high == self.low {
            below
        } else {
            self.between * (kth(self.high) - below) + below
        }
    }
}

/// What `rolling_quantiles` and `spike_quantiles` give for a range of rows of one column.
#[derive(Debug, PartialEq)]
pub struct Rolling {
    /// The rows that `count` and `windows` are of, ascending; None: every row of the range, in order.
    pub rows: Option<Vec<u64>>,
    /// The number of values in each row's window.
    pub count: Vec<u32>,
    /// Each quantile of each row's window (NaN where the window holds none).
    pub windows: Vec<Vec<f64>>,
}

/// `value` as an integer in the order `f64::total_cmp` gives values (the sign bit kept, the other bits of a
/// negative value flipped), so the window is searched by integer comparisons; `value_of` turns it back.
fn key(value: f64) -> i64 {
    let bits = value.to_bits() as i64;
    bits ^ ((((bits >> 63) as u64) >> 1) as i64)
}

/// The value of a `key` (the same flip undoes it).
fn value_of(key: i64) -> f64 {
    f64::from_bits((key ^ ((((key >> 63) as u64) >> 1) as i64)) as u64)
}

/// The window's keys in order: where `key` is, or would go.
fn position(held: &[i64], key: i64) -> usize {
    held.partition_point(|&k| k < key)
}

/// `position` of two keys at once: the two searches step together without branches (`select_unpredictable`), so
/// the processor runs them side by side rather than one after the other. With the ranks read once per window size,
/// a row takes 0.87-0.93x the time of two `position`s in turn (three columns of a week at 1 s, side by side).
fn positions(held: &[i64], a: i64, b: i64) -> (usize, usize) {
    if held.is_empty() {
        return (0, 0);
    }
    let (mut at_a, mut at_b, mut size) = (0, 0, held.len());
    while size > 1 {
        let half = size / 2;
        at_a = std::hint::select_unpredictable(held[at_a + half] < a, at_a + half, at_a);
        at_b = std::hint::select_unpredictable(held[at_b + half] < b, at_b + half, at_b);
        size -= half;
    }
    (at_a + usize::from(held[at_a] < a), at_b + usize::from(held[at_b] < b))
}

/// The rows `first..end` of `row`'s window, [t - window, t) ((0, 0) past the last row): where a range of rows starts.
fn window_of(times: &[i64], row: usize, window: i64) -> (usize, usize) {
    match times.get(row) {
        Some(&t) => (times.partition_point(|&u| u < t.saturating_sub(window)), times.partition_point(|&u| u < t)),
        None => (0, 0),
    }
}

/// Each of `ranks` of `keys` (a window's or a column's values as keys, in any order; put in order only around those
/// ranks). The ranks are selected in ascending order, each among the keys above the one before (a selection partitions
/// the keys around its rank), so three quantiles cost little more than one selection rather than four.
fn read_ranks(keys: &mut [i64], ranks: &[Rank]) -> Vec<f64> {
    let mut wanted: Vec<usize> = ranks.iter().flat_map(|r| [r.low as usize, r.high as usize]).collect();
    wanted.sort_unstable();
    wanted.dedup();
    // Every key before `above` is in its place in the order or below all of those after it.
    let mut above = 0;
    for k in wanted {
        keys[above..].select_nth_unstable(k - above);
        above = k + 1;
    }
    ranks.iter().map(|rank| rank.read(|k| value_of(keys[k as usize]))).collect()
}

/// For each of `rows`, the number of values in its window and each of `quantiles`. `times` must be in ascending
/// order; `values[i]` counts only where `valid[i]`.
pub fn rolling_quantiles(
    times: &[i64],
    values: &[f64],
    valid: &[bool],
    window: i64,
    quantiles: &[(f64, Method)],
    rows: std::ops::Range<usize>,
) -> Rolling {
    let n = times.len().min(values.len()).min(valid.len());
    let rows = rows.start.min(n)..rows.end.min(n);
    let size = rows.len();
    let (mut count, mut out) = (vec![0u32; size], vec![vec![f64::NAN; size]; quantiles.len()]);
    // The first row's window, sorted afresh.
    let (mut first, mut end) = window_of(&times[..n], rows.start, window);
    let mut held: Vec<i64> = (first..end).filter(|&j| valid[j]).map(|j| key(values[j])).collect();
    held.sort_unstable();
    let mut ranks: (usize, Vec<Rank>) = (0, Vec::new());
    for (i, row) in rows.enumerate() {
        let (t, start) = (times[row], times[row].saturating_sub(window));
        loop {
            let enters = end < n && times[end] < t;
            let leaves = first < end && times[first] < start;
            if enters && leaves && valid[end] && valid[first] {
                // One value leaves and one enters: only the values between their places move.
                let entering = key(values[end]);
                let (gone, new) = positions(&held, key(values[first]), entering);
                if new <= gone {
                    held.copy_within(new..gone, new + 1);
                    held[new] = entering;
                } else {
                    held.copy_within(gone + 1..new, gone);
                    held[new - 1] = entering;
                }
                (first, end) = (first + 1, end + 1);
            } else if enters {
                if valid[end] {
                    let entering = key(values[end]);
                    held.insert(position(&held, entering), entering);
                }
                end += 1;
            } else if leaves {
                if valid[first] {
                    held.remove(position(&held, key(values[first])));
                }
                first += 1;
            } else {
                break;
            }
        }
        count[i] = held.len() as u32;
        if held.is_empty() {
            continue;
        }
        if ranks.0 != held.len() {
            ranks = (held.len(), quantiles.iter().map(|&(q, method)| Rank::of(held.len() as u32, q, method)).collect());
        }
        for (column, rank) in out.iter_mut().zip(&ranks.1) {
            column[i] = rank.read(|k| value_of(held[k as usize]));
        }
    }
    Rolling { rows: None, count, windows: out }
}

/// The test a row's own value must be able to pass for its window's quantiles to be wanted: a latency spike's
/// (`analysis.series.spikes`), `value - median >= resolution`, `value >= factor × median` and
/// `value >= median + iqrs × (q3 - q1)`, over windows of at least `min_count` values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpikeRule {
    pub factor: f64,
    pub iqrs: f64,
    pub resolution: f64,
    pub min_count: u32,
}

/// A window's values counted in bins of their keys: the sign, the exponent and the top four bits of the mantissa
/// (16 bins an octave, each at most 6.25 % of its values wide: 256 KB, which a range of rows fills anew), 256 bins a group, so
/// the next bin holding values is at most a few hundred steps away.
struct Histogram {
    counts: Vec<u32>,
    groups: Vec<u32>,
}

const BIN_BITS: u32 = 16;
const GROUP_BITS: u32 = 8;
const SIGN: u64 = 1 << 63;

fn bin_of(key: i64) -> usize {
    (((key as u64) ^ SIGN) >> (64 - BIN_BITS)) as usize
}

/// The least and the greatest value a bin can hold.
fn bin_bounds(bin: usize) -> (f64, f64) {
    let low = (bin as u64) << (64 - BIN_BITS);
    let high = low | ((1u64 << (64 - BIN_BITS)) - 1);
    (value_of((low ^ SIGN) as i64), value_of((high ^ SIGN) as i64))
}

impl Histogram {
    fn new() -> Histogram {
        Histogram { counts: vec![0; 1 << BIN_BITS], groups: vec![0; 1 << (BIN_BITS - GROUP_BITS)] }
    }

    fn add(&mut self, bin: usize, by: i32) {
        self.counts[bin] = self.counts[bin].wrapping_add_signed(by);
        self.groups[bin >> GROUP_BITS] = self.groups[bin >> GROUP_BITS].wrapping_add_signed(by);
    }

    /// The first bin after `bin` that holds a value.
    fn next(&self, bin: usize) -> Option<usize> {
        let group = bin >> GROUP_BITS;
        let end = (group + 1) << GROUP_BITS;
        if let Some(at) = (bin + 1..end).find(|&b| self.counts[b] > 0) {
            return Some(at);
        }
        let group = (group + 1..self.groups.len()).find(|&g| self.groups[g] > 0)?;
        (group << GROUP_BITS..(group + 1) << GROUP_BITS).find(|&b| self.counts[b] > 0)
    }

    /// The last bin before `bin` that holds a value.
    fn previous(&self, bin: usize) -> Option<usize> {
        let group = bin >> GROUP_BITS;
        if let Some(at) = (group << GROUP_BITS..bin).rev().find(|&b| self.counts[b] > 0) {
            return Some(at);
        }
        let group = (0..group).rev().find(|&g| self.groups[g] > 0)?;
        (group << GROUP_BITS..(group + 1) << GROUP_BITS).rev().find(|&b| self.counts[b] > 0)
    }
}

/// The bin of the value at one rank of the window, followed as values enter and leave: `below` values lie in lower bins.
#[derive(Clone, Copy)]
struct Tracker {
    bin: usize,
    below: u32,
}

impl Tracker {
    fn moved(&mut self, bin: usize, by: i32) {
        if bin < self.bin {
            self.below = self.below.wrapping_add_signed(by);
        }
    }

    /// Moves to the bin of the value at `rank` (which the window holds).
    fn find(&mut self, histogram: &Histogram, rank: u32) {
        loop {
            if rank < self.below {
                let Some(bin) = histogram.previous(self.bin) else { return };
                self.below -= histogram.counts[bin];
                self.bin = bin;
            } else if rank >= self.below + histogram.counts[self.bin] {
                let Some(bin) = histogram.next(self.bin) else { return };
                self.below += histogram.counts[self.bin];
                self.bin = bin;
            } else {
                return;
            }
        }
    }
}

/// `rolling_quantiles` of the `median`, `q1` and `q3` (in that order in `quantiles`) of the rows where a spike by
/// `rule` is possible, and only of those rows (`Rolling::rows`): a week's three classes' quantiles of every row were
/// 51 MB, NaN in all but a few hundred rows each. Each window's values are counted in bins (`Histogram`), the bins
/// of three ranks followed as the window moves (the median's lower, q1's higher and q3's lower: each bound reads
/// one): they bound the median and the spread, and a row whose value fails the
/// rule against the bounds (the least median and spread the window can have; each operation of the rule only grows
/// with them) fails it against the quantiles, so only the other rows' windows are ordered, by selection. A row
/// whose own value does not count is not listed; one whose window holds fewer than `min_count` values is, with its
/// count and NaN quantiles (the caller compares it with the whole column's median).
pub fn spike_quantiles(
    times: &[i64],
    values: &[f64],
    valid: &[bool],
    window: i64,
    quantiles: &[(f64, Method); 3],
    rule: SpikeRule,
    rows: std::ops::Range<usize>,
) -> Rolling {
    let n = times.len().min(values.len()).min(valid.len());
    let rows = rows.start.min(n)..rows.end.min(n);
    let mut listed = Rolling { rows: Some(Vec::new()), count: Vec::new(), windows: vec![Vec::new(); 3] };
    let (mut first, mut end) = window_of(&times[..n], rows.start, window);
    let mut histogram = Histogram::new();
    let mut held = 0u32;
    for j in first..end {
        if valid[j] {
            histogram.add(bin_of(key(values[j])), 1);
            held += 1;
        }
    }
    // The ranks the bounds read: the median's lower one (the median is at least its value), q1's higher one and
    // q3's lower one (the spread is at least the gap between them).
    let mut trackers = [Tracker { bin: 0, below: 0 }; 3];
    let mut ranks: (u32, [Rank; 3]) = (0, [Rank { low: 0, high: 0, between: 0.0 }; 3]);
    let mut window_keys: Vec<i64> = Vec::new();
    for row in rows {
        let (t, start) = (times[row], times[row].saturating_sub(window));
        while end < n && times[end] < t {
            if valid[end] {
                let bin = bin_of(key(values[end]));
                histogram.add(bin, 1);
                trackers.iter_mut().for_each(|tracker| tracker.moved(bin, 1));
                held += 1;
            }
            end += 1;
        }
        while first < end && times[first] < start {
            if valid[first] {
                let bin = bin_of(key(values[first]));
                histogram.add(bin, -1);
                trackers.iter_mut().for_each(|tracker| tracker.moved(bin, -1));
                held -= 1;
            }
            first += 1;
        }
        if !valid[row] {
            continue;
        }
        if held < rule.min_count {
            // Too few to be its baseline: the caller compares it with the whole column's median.
            listed.list(row, held, &[f64::NAN; 3]);
            continue;
        }
        if held == 0 {
            continue;
        }
        if ranks.0 != held {
            ranks = (held, quantiles.map(|(q, method)| Rank::of(held, q, method)));
        }
        let [median, q1, q3] = ranks.1;
        for (tracker, rank) in trackers.iter_mut().zip([median.low, q1.high, q3.low]) {
            tracker.find(&histogram, rank);
        }
        // The least median and spread the window can have (a bound of NaN, from bins of NaNs, settles nothing).
        let median = bin_bounds(trackers[0].bin).0;
        let spread = (bin_bounds(trackers[2].bin).0 - bin_bounds(trackers[1].bin).1).max(0.0);
        let value = values[row];
        // The rule's operations in its order, each growing with the median and the spread (rounding keeps order): a
        // value short of the bounds' bar is short of the quantiles'.
        if value - median < rule.resolution || value < rule.factor * median || value < median + rule.iqrs * spread {
            continue;
        }
        window_keys.clear();
        window_keys.extend((first..end).filter(|&j| valid[j]).map(|j| key(values[j])));
        listed.list(row, held, &read_ranks(&mut window_keys, &ranks.1));
    }
    listed
}

impl Rolling {
    /// Adds a row to a listing (`spike_quantiles`): its count and each quantile.
    fn list(&mut self, row: usize, count: u32, quantiles: &[f64]) {
        self.rows.get_or_insert_default().push(row as u64);
        self.count.push(count);
        for (column, &quantile) in self.windows.iter_mut().zip(quantiles) {
            column.push(quantile);
        }
    }
}

/// Each of `quantiles` of all the values that count (NaN when none does), by `read_ranks`.
pub fn overall(values: &[f64], valid: &[bool], quantiles: &[(f64, Method)]) -> Vec<f64> {
    let mut all: Vec<i64> = values.iter().zip(valid).filter(|(_, &ok)| ok).map(|(&v, _)| key(v)).collect();
    if all.is_empty() {
        return vec![f64::NAN; quantiles.len()];
    }
    let ranks: Vec<Rank> = quantiles.iter().map(|&(q, method)| Rank::of(all.len() as u32, q, method)).collect();
    read_ranks(&mut all, &ranks)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seeded stream of pseudo-random numbers (a linear congruential generator's high bits).
    fn numbers(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            seed >> 33
        }
    }

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

    fn same(a: f64, b: f64) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    /// The windows of `times` taken whole, and cut at every row into two ranges, against `plain`.
    fn check(times: &[i64], values: &[f64], valid: &[bool], windows: &[i64], quantiles: &[(f64, Method)]) {
        let n = times.len();
        for &window in windows {
            let wants: Vec<Vec<f64>> = quantiles.iter().map(|&(q, m)| plain(times, values, valid, window, q, m)).collect();
            for cut in 0..=n {
                let (a, b) = (
                    rolling_quantiles(times, values, valid, window, quantiles, 0..cut),
                    rolling_quantiles(times, values, valid, window, quantiles, cut..n),
                );
                for (k, want) in wants.iter().enumerate() {
                    let got: Vec<f64> = a.windows[k].iter().chain(&b.windows[k]).copied().collect();
                    let count: Vec<u32> = a.count.iter().chain(&b.count).copied().collect();
                    for i in 0..n {
                        assert!(same(got[i], want[i]), "row {i} window {window} cut {cut} {:?}", quantiles[k]);
                        assert_eq!(count[i] == 0, want[i].is_nan());
                    }
                }
            }
        }
    }

    #[test]
    fn windows_match_each_window_sorted_by_hand() {
        // Repeated times, gaps, missing values, ties.
        let times = [0, 1, 1, 2, 5, 6, 6, 7, 8, 20, 21, 22, 23, 24];
        let values = [5.0, 1.0, 3.0, 3.0, 2.0, 8.0, 7.0, 0.5, 4.0, 6.0, 6.0, 1.0, 9.0, 2.0];
        let valid = [true, true, false, true, true, true, true, false, true, true, true, true, true, true];
        for q in [0.0, 0.25, 0.5, 0.75, 1.0] {
            for method in [Method::Linear, Method::Nearest] {
                check(&times, &values, &valid, &[1, 3, 4, 10, 100], &[(q, method)]);
            }
        }
    }

    #[test]
    fn long_windows_match_by_hand() {
        // Windows of ~100 values, where most steps have one value leave and one enter.
        let mut next = numbers(7);
        let times: Vec<i64> = (0..300).map(|i| i * 2 - i % 3).collect();
        let values: Vec<f64> = (0..300).map(|_| (next() % 50) as f64 / 4.0).collect();
        let valid: Vec<bool> = (0..300).map(|_| !next().is_multiple_of(10)).collect();
        check(&times, &values, &valid, &[200], &[(0.5, Method::Linear), (0.25, Method::Nearest), (0.75, Method::Nearest)]);
    }

    #[test]
    fn keys_order_values_as_total_cmp_and_turn_back() {
        let values = [f64::NEG_INFINITY, -3.5, -1e-300, -0.0, 0.0, 1e-300, 2.0, 7.25, f64::INFINITY, f64::NAN, -f64::NAN];
        for a in values {
            assert_eq!(value_of(key(a)).to_bits(), a.to_bits());
            for b in values {
                assert_eq!(key(a).cmp(&key(b)), a.total_cmp(&b), "{a} {b}");
            }
        }
        // Negative values in windows, against each window sorted by hand.
        let times: Vec<i64> = (0..40).collect();
        let values: Vec<f64> = (0..40).map(|i| ((i * 7) % 13) as f64 - 6.5).collect();
        check(&times, &values, &[true; 40], &[5, 12], &[(0.5, Method::Linear), (0.25, Method::Nearest)]);
    }

    #[test]
    fn positions_are_each_keys_position() {
        let held: Vec<i64> = vec![-5, -5, 0, 3, 3, 3, 8, 12, 12, 40];
        for n in 0..=held.len() {
            for a in -7..45 {
                for b in [-9, -5, 0, 3, 4, 12, 40, 41] {
                    assert_eq!(positions(&held[..n], a, b), (position(&held[..n], a), position(&held[..n], b)), "{n} {a} {b}");
                }
            }
        }
    }

    #[test]
    fn overall_quantiles_are_those_of_all_values_sorted() {
        let mut next = numbers(11);
        let every: Vec<(f64, Method)> =
            [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0].iter().flat_map(|&q| [(q, Method::Linear), (q, Method::Nearest)]).collect();
        for size in [1, 2, 3, 9, 100, 1001] {
            let values: Vec<f64> = (0..size).map(|_| (next() % 40) as f64 / 4.0 - 3.0).collect();
            let valid: Vec<bool> = (0..size).map(|i| i == 0 || !next().is_multiple_of(7)).collect();
            let mut all: Vec<f64> = (0..size).filter(|&j| valid[j]).map(|j| values[j]).collect();
            all.sort_by(f64::total_cmp);
            // All the quantiles of one call (each selected among the values above the last), in any order.
            for quantiles in [every.clone(), every.iter().rev().copied().collect()] {
                let got = overall(&values, &valid, &quantiles);
                for (&(q, method), got) in quantiles.iter().zip(got) {
                    let want = Rank::of(all.len() as u32, q, method).read(|k| all[k as usize]);
                    assert_eq!(got.to_bits(), want.to_bits(), "{size} values, q {q} {method:?}");
                }
            }
        }
    }

    /// Whether `value` is a spike by `rule` against a window's `count`, median, q1 and q3 (`_flags` in spikes.py).
    fn spike(rule: SpikeRule, value: f64, count: u32, median: f64, q1: f64, q3: f64) -> bool {
        let iqr = q3 - q1;
        count >= rule.min_count && value - median >= rule.resolution && value >= rule.factor * median && value >= median + rule.iqrs * iqr
    }

    #[test]
    fn spike_quantiles_are_the_windows_quantiles_wherever_a_spike_is_possible() {
        let mut next = numbers(3);
        let three = [(0.5, Method::Linear), (0.25, Method::Nearest), (0.75, Method::Nearest)];
        for (case, rule) in [
            SpikeRule { factor: 3.0, iqrs: 5.0, resolution: 0.01, min_count: 30 },
            SpikeRule { factor: 1.2, iqrs: 0.5, resolution: 0.0, min_count: 1 },
            SpikeRule { factor: 0.0, iqrs: 0.0, resolution: f64::NEG_INFINITY, min_count: 0 },
        ]
        .into_iter()
        .enumerate()
        {
            let n = 1500;
            let times: Vec<i64> = (0..n as i64).map(|i| i * 2 - i % 3 + if i > 900 { 400 } else { 0 }).collect();
            // Latencies around 1 with noise, ties, zeros, negative values, outliers three to a hundred times higher,
            // infinities and NaN, some missing.
            let values: Vec<f64> = (0..n)
                .map(|i| match next() % 60 {
                    0 => (next() % 300) as f64,
                    1 => 0.0,
                    2 => -((next() % 5) as f64),
                    3 if case > 0 => f64::INFINITY,
                    4 if case > 0 => f64::NAN,
                    5 => 3.0 + (i % 7) as f64 * 0.01,
                    _ => 0.5 + (next() % 1000) as f64 / 1000.0,
                })
                .collect();
            let valid: Vec<bool> = (0..n).map(|_| !next().is_multiple_of(10)).collect();
            for window in [40, 200, 1200] {
                let all = rolling_quantiles(&times, &values, &valid, window, &three, 0..n);
                for cut in [0, 1, 333, 901, n] {
                    let (a, b) = (
                        spike_quantiles(&times, &values, &valid, window, &three, rule, 0..cut),
                        spike_quantiles(&times, &values, &valid, window, &three, rule, cut..n),
                    );
                    // The listed rows of both ranges, each with its count and quantiles.
                    let mut listed = std::collections::BTreeMap::new();
                    for part in [&a, &b] {
                        for (j, &row) in part.rows.as_ref().expect("a listing").iter().enumerate() {
                            let quantiles: Vec<f64> = (0..3).map(|k| part.windows[k][j]).collect();
                            assert!(listed.insert(row as usize, (part.count[j], quantiles)).is_none(), "row {row} listed twice");
                        }
                    }
                    let mut worked_out = 0;
                    for i in 0..n {
                        let want: Vec<f64> = (0..3).map(|k| all.windows[k][i]).collect();
                        let is_spike = valid[i] && spike(rule, values[i], all.count[i], want[0], want[1], want[2]);
                        // Listed: every row whose own value counts and whose window is too short to be its baseline
                        // (the caller compares it with the whole column's), and every row whose quantiles were worked out.
                        let Some((count, got)) = listed.get(&i) else {
                            assert!(
                                !(is_spike || valid[i] && all.count[i] < rule.min_count),
                                "case {case} window {window} cut {cut} row {i}"
                            );
                            continue;
                        };
                        assert_eq!(*count, all.count[i], "case {case} window {window} cut {cut} row {i}");
                        assert!(valid[i], "row {i} does not count, yet is listed");
                        if !got[0].is_nan() {
                            worked_out += 1;
                            for k in 0..3 {
                                assert!(same(got[k], want[k]), "case {case} window {window} cut {cut} row {i} quantile {k}");
                            }
                        }
                        // What `_flags` decides from the answer is what it decides from every row's quantiles.
                        let decided = spike(rule, values[i], *count, got[0], got[1], got[2]);
                        assert_eq!(decided, is_spike, "case {case} window {window} cut {cut} row {i}");
                    }
                    // The bounds settle most rows under the real rule; a rule every value passes settles none.
                    if case == 0 {
                        assert!(worked_out < n / 4, "{worked_out} of {n} rows ordered");
                    }
                }
            }
        }
    }

    #[test]
    fn bins_bound_their_values_in_order() {
        let values = [f64::NEG_INFINITY, -3.5, -1e-300, -0.0, 0.0, 1e-300, 0.999, 1.0, 1.01, 2.0, 7.25, 1e300, f64::INFINITY];
        for pair in values.windows(2) {
            assert!(bin_of(key(pair[0])) <= bin_of(key(pair[1])));
        }
        for v in values {
            let (low, high) = bin_bounds(bin_of(key(v)));
            assert!(low.total_cmp(&v).is_le() && v.total_cmp(&high).is_le(), "{v}: {low} {high}");
        }
        // 16 bins an octave: 1.0 and 1.06 share one, 1.0 and 1.0625 do not.
        assert_eq!(bin_of(key(1.0)), bin_of(key(1.06)));
        assert_ne!(bin_of(key(1.0)), bin_of(key(1.0625)));
    }

    #[test]
    fn empty_and_all_missing_inputs_give_empty_windows() {
        let none = rolling_quantiles(&[], &[], &[], 10, &[(0.5, Method::Linear)], 0..0);
        assert!(none.count.is_empty() && none.windows == vec![Vec::<f64>::new()]);
        assert!(overall(&[], &[], &[(0.5, Method::Linear)])[0].is_nan());
        let missing = rolling_quantiles(&[1, 2], &[1.0, 2.0], &[false, false], 10, &[(0.5, Method::Linear)], 0..2);
        assert_eq!(missing.count, vec![0, 0]);
        assert!(missing.windows[0].iter().all(|v| v.is_nan()));
        assert!(overall(&[1.0, 2.0], &[false, false], &[(0.5, Method::Linear)])[0].is_nan());
        // A range past the rows is empty, not a panic.
        assert!(rolling_quantiles(&[1, 2], &[1.0, 2.0], &[true, true], 10, &[(0.5, Method::Linear)], 5..9).count.is_empty());
    }
}
