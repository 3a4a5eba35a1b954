//! Which metrics a read asks for: exact names and glob patterns.

use std::collections::HashSet;

use globset::{Glob, GlobSet, GlobSetBuilder};

pub struct Selection {
    exact: Option<HashSet<String>>,
    globs: Option<GlobSet>,
}

fn is_pattern(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

impl Selection {
    /// Every metric.
    pub fn all() -> Self {
        Selection { exact: None, globs: None }
    }

    /// Every entry matches its exact name; entries containing `*`, `?` or
    /// `[` are also globs (`*` also matches `.`), unless they do not parse
    /// as one, since metric names may contain those characters literally.
    pub fn new(patterns: &[String]) -> Result<Self, String> {
        let mut exact = HashSet::new();
        let mut builder = GlobSetBuilder::new();
        let mut any_glob = false;
        for p in patterns {
            if let Some(glob) = Some(p).filter(|p| is_pattern(p)).and_then(|p| Glob::new(p).ok()) {
                builder.add(glob);
                any_glob = true;
            }
            exact.insert(p.clone());
        }
        let globs = if any_glob { Some(builder.build().map_err(|e| e.to_string())?) } else { None };
        Ok(Selection { exact: Some(exact), globs })
    }

    pub fn matches(&self, name: &str) -> bool {
        match (&self.exact, &self.globs) {
            (None, _) => true,
            (Some(exact), globs) => exact.contains(name) || globs.as_ref().is_some_and(|g| g.is_match(name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_cross_dots_and_slashes() {
        let s = Selection::new(&["serverStatus.wiredTiger.cache.*".into(), "start".into()]).unwrap();
        assert!(s.matches("serverStatus.wiredTiger.cache.bytes currently in the cache"));
        assert!(s.matches("start"));
        assert!(!s.matches("serverStatus.uptime"));
        let s = Selection::new(&["systemMetrics.mounts.*.capacity".into()]).unwrap();
        assert!(s.matches("systemMetrics.mounts./boot/efi#2.capacity"));
        let s = Selection::new(&["odd[name".into(), "a[bc]".into()]).unwrap();
        assert!(s.matches("odd[name") && s.matches("a[bc]") && s.matches("ab"));
        assert!(!s.matches("ad"));
    }
}
