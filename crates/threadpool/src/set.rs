//! The pools of one configuration, found by name.

use std::io;

use crate::pool::{PoolSettings, ThreadPool, ThreadStart};

/// Every pool a configuration declares or uses, by name. A few pools at most (one per
/// disk), so a lookup is a short scan.
#[derive(Clone, Debug, Default)]
pub struct ThreadPools {
    pools: Vec<ThreadPool>,
}

impl ThreadPools {
    /// Starts each declared pool's threads now, and makes the `default` pool (nginx's 32
    /// threads, 65536 tasks) if none was declared; its threads start with its first task.
    pub fn start(
        declared: &[PoolSettings],
        on_start: Option<ThreadStart>,
    ) -> io::Result<ThreadPools> {
        let mut pools = ThreadPools::default();
        for settings in declared {
            match ThreadPool::start(settings, on_start.clone()) {
                Ok(pool) => pools.pools.push(pool),
                Err(error) => {
                    pools.shutdown();
                    return Err(error);
                }
            }
        }
        if pools.get(b"default").is_none() {
            let settings = PoolSettings::default_pool();
            pools
                .pools
                .push(ThreadPool::start_lazily(&settings, on_start));
        }
        Ok(pools)
    }

    pub fn get(&self, name: &[u8]) -> Option<&ThreadPool> {
        self.pools
            .iter()
            .find(|pool| pool.name().as_bytes() == name)
    }

    /// The `default` pool, which always exists.
    pub fn default_pool(&self) -> &ThreadPool {
        self.get(b"default")
            .expect("ThreadPools::start always makes the default pool")
    }

    pub fn iter(&self) -> impl Iterator<Item = &ThreadPool> {
        self.pools.iter()
    }

    /// Stops every pool after its queued and running tasks.
    pub fn shutdown(&self) {
        for pool in &self.pools {
            pool.shutdown();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(name: &str, threads: usize) -> PoolSettings {
        PoolSettings {
            name: name.to_owned(),
            threads,
            max_queue: 4,
        }
    }

    #[test]
    fn default_pool_is_made_lazily_when_not_declared() {
        let pools = ThreadPools::start(&[settings("disk1", 1)], None).unwrap();
        assert!(pools.get(b"disk1").unwrap().is_started());
        let default = pools.default_pool();
        assert!(!default.is_started(), "no thread before the first task");
        let completion = default.submit(|| 7).unwrap();
        assert!(default.is_started());
        let result = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(completion);
        assert_eq!(result, Ok(7));
        assert!(pools.get(b"disk2").is_none());
        pools.shutdown();
    }

    #[test]
    fn declared_default_pool_keeps_its_size() {
        let pools = ThreadPools::start(&[settings("default", 2)], None).unwrap();
        assert_eq!(pools.iter().count(), 1);
        assert!(pools.default_pool().is_started());
        pools.shutdown();
    }

    #[test]
    fn a_stopped_lazy_pool_never_starts_threads() {
        let pools = ThreadPools::start(&[], None).unwrap();
        pools.shutdown();
        assert!(pools.default_pool().submit(|| ()).is_err());
        assert!(!pools.default_pool().is_started());
    }
}
