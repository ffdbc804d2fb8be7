//! Fault injection for tests (the `fault-injection` feature): readbacks that fail as a lost
//! device would, so callers' fallbacks can be exercised on any adapter.

use std::sync::atomic::{AtomicU32, Ordering};

use super::*;
use crate::error::{GpuError, Result};

/// Readbacks still to pass, then to fail, on purpose: on any thread, and on one thread alone
/// (one proof among several in flight).
#[derive(Default)]
pub(super) struct FaultInjection {
    pub(super) failing: AtomicU32,
    pub(super) passing: AtomicU32,
    /// (thread, readbacks to pass, readbacks to fail) for threads given faults of their own.
    pub(super) per_thread: std::sync::Mutex<Vec<(std::thread::ThreadId, u32, u32)>>,
}

impl GpuContext {
    /// Testing fault injection: the next `count` readbacks fail as a lost device would, so
    /// callers' fallbacks can be exercised on any adapter.
    #[cfg(feature = "fault-injection")]
    pub(crate) fn fail_next_readbacks(&self, count: u32) {
        self.fail_readbacks(0, count);
    }

    /// Testing fault injection: `skip` readbacks succeed, then `count` fail.
    #[cfg(feature = "fault-injection")]
    pub(crate) fn fail_readbacks(&self, skip: u32, count: u32) {
        self.faults.passing.store(skip, Ordering::SeqCst);
        self.faults.failing.store(count, Ordering::SeqCst);
    }

    /// Testing fault injection: on the calling thread alone, `skip` readbacks succeed, then
    /// `count` fail (other threads proving on the context are not touched).
    #[cfg(feature = "fault-injection")]
    pub(crate) fn fail_readbacks_on_this_thread(&self, skip: u32, count: u32) {
        let here = std::thread::current().id();
        let mut per_thread = self.faults.per_thread.lock().expect("fault injection poisoned");
        per_thread.retain(|(t, _, _)| *t != here);
        if count > 0 {
            per_thread.push((here, skip, count));
        }
    }

    /// Testing fault injection: the injected failures not struck yet.
    #[cfg(feature = "fault-injection")]
    pub(crate) fn injected_failures_left(&self) -> u32 {
        self.faults.failing.load(Ordering::SeqCst)
    }

    pub(super) fn injected_failure(&self) -> Result<()> {
        if let Ok(mut per_thread) = self.faults.per_thread.lock() {
            let here = std::thread::current().id();
            if let Some(at) = per_thread.iter().position(|(t, _, _)| *t == here) {
                let (_, passing, failing) = &mut per_thread[at];
                if *passing > 0 {
                    *passing -= 1;
                } else {
                    *failing -= 1;
                    if *failing == 0 {
                        per_thread.swap_remove(at);
                    }
                    return Err(GpuError::Device("injected readback failure on this thread (testing)".into()));
                }
            }
        }
        if self.faults.failing.load(Ordering::SeqCst) == 0 {
            return Ok(());
        }
        if self.faults.passing.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
            return Ok(());
        }
        let fail = self.faults.failing.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
        if fail {
            return Err(GpuError::Device("injected readback failure (testing)".into()));
        }
        Ok(())
    }
}
