//! The order of changes to directories under delegation (RFC 8881
//! §10.9): a change holds its directories' stripes from before it is made
//! until its notifications are queued, so that two clients' changes to
//! one directory are told in the order they were made.

use std::sync::Arc;

use state::FileKey;

/// Locks ordering the changes to a directory under delegation with their
/// notifications, by the directory's handle.
pub struct Stripes(Vec<Arc<tokio::sync::Mutex<()>>>);

const STRIPES: usize = 64;

impl Default for Stripes {
    fn default() -> Self {
        Stripes((0..STRIPES).map(|_| Arc::default()).collect())
    }
}

/// Held from before a change to directories under delegation until its
/// notifications are queued: two clients' changes to one directory are
/// then told in the order they were made.
pub struct Order(#[allow(dead_code)] Vec<tokio::sync::OwnedMutexGuard<()>>);

impl Order {
    /// Nothing held: no directory is under delegation.
    pub fn none() -> Order {
        Order(Vec::new())
    }
}

impl Stripes {
    /// Holds the stripes of `dirs`, lowest first (so that two changes
    /// never wait for each other in a circle).
    pub async fn lock(&self, dirs: &[&FileKey]) -> Order {
        let mut stripes: Vec<usize> = dirs
            .iter()
            .map(|d| {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                std::hash::Hash::hash(d, &mut h);
                std::hash::Hasher::finish(&h) as usize % STRIPES
            })
            .collect();
        stripes.sort_unstable();
        stripes.dedup();
        let mut held = Vec::with_capacity(stripes.len());
        for i in stripes {
            held.push(self.0[i].clone().lock_owned().await);
        }
        Order(held)
    }
}
