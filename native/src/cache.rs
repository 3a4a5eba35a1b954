//! A map from a reference document's structural fingerprint to what was
//! built from it (names, layouts), shared by worker threads: chunks with
//! the same structure, the common case, build it once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub struct FingerprintCache<T>(Mutex<HashMap<u64, Arc<T>>>);

impl<T> Default for FingerprintCache<T> {
    fn default() -> Self {
        FingerprintCache(Mutex::new(HashMap::new()))
    }
}

impl<T> FingerprintCache<T> {
    pub fn get_or_build(&self, fingerprint: u64, build: impl FnOnce() -> Result<T, String>) -> Result<Arc<T>, String> {
        if let Some(hit) = self.0.lock().unwrap().get(&fingerprint) {
            return Ok(hit.clone());
        }
        // Built outside the lock; a race only builds the same value twice.
        let built = Arc::new(build()?);
        self.0.lock().unwrap().insert(fingerprint, built.clone());
        Ok(built)
    }
}
