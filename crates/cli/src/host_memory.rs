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
    #[cfg(target_os = "linux")]
    if let Some(leaves) = cgroup_leaves() {
        consider(leaves, "this process's cgroup leaves");
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

/// What the memory cgroup (v2, else v1, at `/sys/fs/cgroup`) leaves: its limit less its working
/// set — its usage less the inactive file pages, which the kernel reclaims before it refuses an
/// allocation (kubelet's measure; the usage alone counts the whole page cache, and the anonymous
/// memory alone misses shared memory and the kernel's own). None without a limit.
#[cfg(target_os = "linux")]
fn cgroup_leaves() -> Option<u64> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let number = |path: &str| read(path)?.trim().parse::<u64>().ok();
    let stat = |path: &str, key: &str| read(path)?.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse::<u64>().ok());
    let (limit, usage, inactive) = match number("/sys/fs/cgroup/memory.current") {
        Some(usage) => (number("/sys/fs/cgroup/memory.max")?, usage, stat("/sys/fs/cgroup/memory.stat", "inactive_file")),
        None => (
            number("/sys/fs/cgroup/memory/memory.limit_in_bytes")?,
            number("/sys/fs/cgroup/memory/memory.usage_in_bytes")?,
            stat("/sys/fs/cgroup/memory/memory.stat", "total_inactive_file"),
        ),
    };
    Some(limit.saturating_sub(usage.saturating_sub(inactive.unwrap_or(0))))
}
