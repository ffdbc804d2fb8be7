use thiserror::Error;

/// Everything that can go wrong on the GPU side, in words a user can act on.
#[derive(Debug, Error)]
pub enum GpuError {
    /// No adapter to open a device on; the string adds where or why (may be empty).
    #[error("no GPU adapter found{0}; install a Vulkan, Metal or DX12 driver (on Debian/Ubuntu: `apt-get install mesa-vulkan-drivers` for a software one) or use the CPU path")]
    NoAdapter(String),

    /// No adapter matches the selector.
    #[error(
        "no adapter matches {selector} (WHIR_ADAPTER or the adapter selector); available: {available}; pick one by backend, `index:N` or part of its name"
    )]
    AdapterNotFound {
        /// The selector, as written.
        selector: String,
        /// The adapters there are, described.
        available: String,
    },

    /// The adapter refused to open a device.
    #[error("could not open a device on adapter {adapter}: {reason}")]
    RequestDevice {
        /// The adapter, described.
        adapter: String,
        /// wgpu's reason.
        reason: String,
    },

    /// `MulVariant::U64` asked of an adapter without `SHADER_INT64` (named in the string).
    #[error("the u64 field-multiply variant needs SHADER_INT64, which adapter {0} lacks; use MulVariant::Emulated")]
    Int64Unsupported(String),

    /// One buffer would exceed the adapter's limit.
    #[error("{what} needs {needed} bytes in one buffer, over this adapter's limit of {limit} bytes; split the input or use the CPU path")]
    TooLarge {
        /// What the buffer is for.
        what: String,
        /// Bytes it needs.
        needed: u64,
        /// The adapter's limit, in bytes.
        limit: u64,
    },

    /// Arguments the call cannot take (shapes, lengths, mismatched contexts); the string says which.
    #[error("invalid input: {0}")]
    InvalidInput(String),

    /// A kernel's WGSL could not be composed or built.
    #[error("WGSL composition failed for {kernel}: {reason}")]
    Shader {
        /// The kernel (or WGSL source) concerned.
        kernel: String,
        /// What went wrong.
        reason: String,
    },

    /// wgpu reported a validation error.
    #[error("GPU validation error in {context}: {message}")]
    Validation {
        /// The work it was reported in.
        context: String,
        /// wgpu's message.
        message: String,
    },

    /// The device ran out of memory.
    #[error("GPU out of memory in {context}: {message}; free GPU memory or use smaller inputs")]
    OutOfMemory {
        /// The work it was reported in.
        context: String,
        /// wgpu's message.
        message: String,
    },

    /// The device was lost, a poll failed, or what the GPU returned is malformed.
    #[error("GPU device lost or poll failed: {0}")]
    Device(String),

    /// A readback buffer could not be mapped.
    #[error("mapping a readback buffer failed: {0}")]
    Map(String),

    /// An allocation would exceed the context's GPU memory budget.
    #[error("{what} needs {needed_mib:.1} MiB of GPU memory, over the budget of {budget_mib:.1} MiB (--gpu-memory / WHIR_GPU_MEMORY_MIB); raise the budget or shrink the job")]
    OverBudget {
        /// What the memory is for.
        what: String,
        /// MiB it needs.
        needed_mib: f64,
        /// The budget, in MiB.
        budget_mib: f64,
    },
}

/// `Result` with [`GpuError`] as the default error.
pub type Result<T, E = GpuError> = std::result::Result<T, E>;
