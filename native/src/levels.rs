//! A series as the explorer's page stores it: its least and greatest value in each column of a time axis, as 16-bit
//! levels of the series' own range (`analysis/outputs/report/explorer.py`). A week's page holds 2,300 series of 4,800
//! levels each: levelled here, in the workers that reduced them, instead of as (series, columns, 2) floats handed to
//! numpy (90 MB, seven passes over it in one thread).

/// The level of a column that holds no value; values take 0 ..= EMPTY - 1 (explorer.py's `EMPTY`).
pub const EMPTY: u16 = u16::MAX;

#[derive(Debug, PartialEq)]
pub struct Levels {
    pub low: f64,
    pub high: f64,
    pub levels: Vec<u16>,
}

/// `values` (a series' least and greatest of each column in turn; NaN: the column holds none) as levels: `low`, the
/// least of them, is 0, `high`, the greatest, EMPTY - 1 (every level 0 when they are one value), each value
/// `(value - low) * scale` rounded half to even (numpy's `rint`: the same operations in the same order give the same
/// levels); None when no value is held.
pub fn levels(values: impl Iterator<Item = f64> + Clone) -> Option<Levels> {
    let mut held = values.clone().filter(|v| !v.is_nan());
    let first = held.next()?;
    let (low, high) = held.fold((first, first), |(low, high), v| (if v < low { v } else { low }, if v > high { v } else { high }));
    let scale = if high > low { f64::from(EMPTY - 1) / (high - low) } else { 0.0 };
    let levels = values.map(|v| if v.is_nan() { EMPTY } else { ((v - low) * scale).round_ties_even() as u16 }).collect();
    Some(Levels { low, high, levels })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_spans_the_levels_and_a_missing_column_is_empty() {
        let found = levels([2.0, 4.0, f64::NAN, f64::NAN, 3.0, 3.0].into_iter()).unwrap();
        assert_eq!((found.low, found.high), (2.0, 4.0));
        // 3.0 is halfway: 32767 exactly, no rounding; EMPTY where the column held nothing.
        assert_eq!(found.levels, vec![0, EMPTY - 1, EMPTY, EMPTY, 32767, 32767]);
    }

    #[test]
    fn one_value_is_level_0_and_no_value_is_none() {
        let found = levels([7.5, 7.5, f64::NAN, 7.5].into_iter()).unwrap();
        assert_eq!((found.low, found.high, found.levels), (7.5, 7.5, vec![0, 0, EMPTY, 0]));
        assert_eq!(levels([f64::NAN, f64::NAN].into_iter()), None);
        assert_eq!(levels(std::iter::empty()), None);
    }

    #[test]
    fn halves_round_to_even() {
        // (v - 0) * 65534 / 131068 = v / 2: 1 -> 0.5 -> 0, 3 -> 1.5 -> 2, 5 -> 2.5 -> 2.
        let found = levels([0.0, 131068.0, 1.0, 3.0, 5.0].into_iter()).unwrap();
        assert_eq!(found.levels, vec![0, EMPTY - 1, 0, 2, 2]);
    }
}
