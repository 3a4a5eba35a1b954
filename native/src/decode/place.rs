//! Which rows are kept and where each lands in the time-sorted output.

use std::collections::HashSet;

use super::prepare::Prepared;

/// Per chunk, the indices of the rows kept (None keeps all): interim
/// samples that an archive file also holds, and samples outside
/// [start, end], are dropped.
pub fn kept_rows(chunks: &[Prepared], interim: &[bool], start: Option<i64>, end: Option<i64>) -> Vec<Option<Vec<usize>>> {
    let archived: HashSet<i64> = if interim.iter().any(|&f| f) {
        chunks.iter().zip(interim).filter(|(_, &f)| !f).flat_map(|(p, _)| p.times.iter().copied()).collect()
    } else {
        HashSet::new()
    };
    chunks
        .iter()
        .zip(interim)
        .map(|(p, &interim)| {
            let wanted = |t: i64| start.is_none_or(|s| t >= s) && end.is_none_or(|e| t <= e) && !(interim && archived.contains(&t));
            if p.times.iter().all(|&t| wanted(t)) {
                None
            } else {
                Some((0..p.times.len()).filter(|&i| wanted(p.times[i])).collect())
            }
        })
        .collect()
}

/// Chunks whose kept rows fill one contiguous, sorted range of the output.
pub struct Group {
    pub chunks: Vec<usize>,
    pub offset: usize,
    pub rows: usize,
    /// Source `(chunk within group, row)` of each output row; None when the
    /// group is one chunk whose rows are all kept and already sorted.
    pub order: Option<Vec<(u32, u32)>>,
}

impl Group {
    /// `(chunk within group, row)` of each output row, in output order.
    pub fn sources<'a>(&'a self, chunks: &[Prepared]) -> Box<dyn Iterator<Item = (usize, usize)> + 'a> {
        match &self.order {
            None => Box::new((0..chunks[self.chunks[0]].times.len()).map(|r| (0, r))),
            Some(order) => Box::new(order.iter().map(|&(j, r)| (j as usize, r as usize))),
        }
    }

    /// Where each of the group's chunks starts in one scratch buffer of all their rows, and (last) its length:
    /// overlapping chunks are decoded each into its part, then gathered in time order by `order`.
    pub fn scratch_starts(&self, chunks: &[Prepared]) -> Vec<usize> {
        let mut starts = vec![0usize];
        for &c in &self.chunks {
            starts.push(starts.last().unwrap() + chunks[c].delta_count + 1);
        }
        starts
    }
}

/// Groups chunks whose kept time spans overlap (taken in order of their
/// earliest time, so disjoint groups follow each other); inside a group rows
/// are sorted by time, ties in chunk order.
pub fn group_rows(chunks: &[Prepared], keeps: &[Option<Vec<usize>>]) -> Vec<Group> {
    let rows_of = |c: usize| -> Vec<usize> { keeps[c].clone().unwrap_or_else(|| (0..chunks[c].times.len()).collect()) };
    let spans: Vec<Option<(i64, i64)>> = (0..chunks.len())
        .map(|c| {
            let times = rows_of(c).into_iter().map(|r| chunks[c].times[r]);
            times.fold(None, |span, t| Some(span.map_or((t, t), |(lo, hi): (i64, i64)| (lo.min(t), hi.max(t)))))
        })
        .collect();
    let mut order: Vec<usize> = (0..chunks.len()).filter(|&c| spans[c].is_some()).collect();
    order.sort_by_key(|&c| spans[c].unwrap().0);

    let mut groups: Vec<Group> = Vec::new();
    let mut group_max = i64::MIN;
    for c in order {
        let (lo, hi) = spans[c].unwrap();
        match groups.last_mut() {
            Some(g) if lo < group_max => g.chunks.push(c),
            _ => groups.push(Group { chunks: vec![c], offset: 0, rows: 0, order: None }),
        }
        group_max = group_max.max(hi);
    }
    let mut offset = 0;
    for g in &mut groups {
        let rows: Vec<Vec<usize>> = g.chunks.iter().map(|&c| rows_of(c)).collect();
        g.offset = offset;
        g.rows = rows.iter().map(Vec::len).sum();
        offset += g.rows;
        let lone = g.chunks[0];
        if g.chunks.len() == 1 && keeps[lone].is_none() && chunks[lone].times.is_sorted() {
            continue;
        }
        let mut keyed: Vec<(i64, u32, u32)> = Vec::with_capacity(g.rows);
        for (j, (&c, rows)) in g.chunks.iter().zip(&rows).enumerate() {
            keyed.extend(rows.iter().map(|&r| (chunks[c].times[r], j as u32, r as u32)));
        }
        keyed.sort_unstable();
        g.order = Some(keyed.into_iter().map(|(_, j, r)| (j, r)).collect());
    }
    groups
}

/// The output's time column.
pub fn time_column(groups: &[Group], chunks: &[Prepared], rows: usize) -> Vec<i64> {
    let mut time = vec![0i64; rows];
    for g in groups {
        for (i, (j, r)) in g.sources(chunks).enumerate() {
            time[g.offset + i] = chunks[g.chunks[j]].times[r];
        }
    }
    time
}
