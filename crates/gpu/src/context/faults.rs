//! Fault injection for tests (the `fault-injection` feature): readbacks that fail as a lost
//! device would, so callers' fallbacks can be exercised on any adapter.

use std::sync::atomic::{AtomicU32, Ordering};


use super::*;
use crate::error::{GpuError, Result};


/// Readbacks still to pass, then to fail, on purpose.
#[derive(Default)]
pub(super) struct FaultInjection {
    pub(super) failing: AtomicU32,
    pub(super) passing: AtomicU32,
}

impl GpuContext {
    /// Testing fault injection: the next `count` readbacks fail as a lost device would, so
    /// callers' fallbacks can be exercised on any adapter.
    #[cfg(feature = "fault-injection")]
    pub fn fail_next_readbacks(&self, count: u32) {
        self.fail_readbacks(0, count);
    }

    /// Testing fault injection: `skip` readbacks succeed, then `count` fail.
    #[cfg(feature = "fault-injection")]
    pub fn fail_readbacks(&self, skip: u32, count: u32) {
        self.faults.passing.store(skip, Ordering::SeqCst);
        self.faults.failing.store(count, Ordering::SeqCst);
    }

    /// Testing fault injection: the injected failures not struck yet.
    #[cfg(feature = "fault-injection")]
    pub fn injected_failures_left(&self) -> u32 {
        self.faults.failing.load(Ordering::SeqCst)
    }

    pub(super) fn injected_failure(&self) -> Result<()> {
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
