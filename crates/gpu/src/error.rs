use thiserror::Error;

/// Everything that can go wrong on the GPU side, in words a user can act on.
#[derive(Debug, Error)]
pub enum GpuError {
    #[error("no GPU adapter found{0}; install a Vulkan, Metal or DX12 driver (on Debian/Ubuntu: `apt-get install mesa-vulkan-drivers` for a software one) or use the CPU path")]
    NoAdapter(String),

    #[error(
        "no adapter matches {selector} (WHIR_ADAPTER or the adapter selector); available: {available}; pick one by backend, `index:N` or part of its name"
    )]
    AdapterNotFound { selector: String, available: String },

    #[error("could not open a device on adapter {adapter}: {reason}")]
    RequestDevice { adapter: String, reason: String },

    #[error("the u64 field-multiply variant needs SHADER_INT64, which adapter {0} lacks; use MulVariant::Emulated")]
    Int64Unsupported(String),

    #[error("{what} needs {needed} bytes in one buffer, over this adapter's limit of {limit} bytes; split the input or use the CPU path")]
    TooLarge { what: String, needed: u64, limit: u64 },

    #[error("invalid input: {0}")]
    InvalidInput(String),

    #[error("WGSL composition failed for {kernel}: {reason}")]
    Shader { kernel: String, reason: String },

    #[error("GPU validation error in {context}: {message}")]
    Validation { context: String, message: String },

    #[error("GPU out of memory in {context}: {message}; free GPU memory or use smaller inputs")]
    OutOfMemory { context: String, message: String },

    #[error("GPU device lost or poll failed: {0}")]
    Device(String),

    #[error("mapping a readback buffer failed: {0}")]
    Map(String),

    #[error("{what} needs {needed_mib:.1} MiB of GPU memory, over the budget of {budget_mib:.1} MiB (--gpu-memory / WHIR_GPU_MEMORY_MIB); raise the budget or shrink the job")]
    OverBudget { what: String, needed_mib: f64, budget_mib: f64 },
}

pub type Result<T, E = GpuError> = std::result::Result<T, E>;
