//! How much host memory a CPU proof may take: `--memory`, else what this machine and this
//! process may still allocate (the memory the system calls available, what a cgroup's limit
//! leaves, what the address-space and data limits leave: `ulimit -v` / `-d`). Read here, at the
//! edge; the prover takes the budget as a value ([`HostMemory`]).

use whir_prover::HostMemory;

/// `--memory MIB` where given, else [`machine`].
pub fn host_memory(memory_mib: Option<u64>) -> HostMemory {
    match memory_mib {
        Some(mib) => HostMemory { bytes: mib.saturating_mul(1 << 20), source: format!("budget (--memory {mib})") },
        None => machine(),
    }
}

/// The least of what the machine has available and what this process's limits leave.
pub fn machine() -> HostMemory {
    use sysinfo::{ProcessRefreshKind, ProcessesToUpdate, System};
    let mut sys = System::new();
    sys.refresh_memory();
    let mut best = HostMemory { bytes: sys.available_memory(), source: "this machine has available (--memory sets a budget)".into() };
    let mut consider = |bytes: u64, source: &str| {
        if bytes < best.bytes {
            best = HostMemory { bytes, source: source.into() };
        }
    };
    if let Some(cgroup) = sys.cgroup_limits() {
        // The cgroup's limit less its anonymous memory: its usage counts the page cache too,
        // which the kernel reclaims before it refuses an allocation.
        consider(cgroup.total_memory.saturating_sub(cgroup.rss), "this process's cgroup leaves");
    }
    #[cfg(unix)]
    {
        let pid = sysinfo::get_current_pid().ok();
        let used = pid.and_then(|pid| {
            sys.refresh_processes_specifics(ProcessesToUpdate::Some(&[pid]), false, ProcessRefreshKind::nothing().with_memory());
            sys.process(pid).map(|p| p.virtual_memory())
        });
        for (resource, source) in
            [(libc::RLIMIT_AS, "the address-space limit (ulimit -v) leaves"), (libc::RLIMIT_DATA, "the data-size limit (ulimit -d) leaves")]
        {
            let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            // SAFETY: getrlimit writes one rlimit through a valid pointer.
            let known = unsafe { libc::getrlimit(resource, &mut limit) } == 0;
            if known && limit.rlim_cur != libc::RLIM_INFINITY {
                // (rlim_t is u64 on Linux and macOS, not on every unix.)
                #[allow(clippy::unnecessary_cast)]
                consider((limit.rlim_cur as u64).saturating_sub(used.unwrap_or(0)), source);
            }
        }
    }
    best
}
