//! The `whir` command. For now `whir info`; `prove`, `verify` and `bench` arrive with the prover.

use anyhow::Result;
use clap::{Parser, Subcommand};
use whir_gpu::{list_adapters, AdapterSelector, AdapterSummary, GpuContext, GpuOptions};

#[derive(Parser)]
#[command(name = "whir", version, about = "WHIR polynomial commitments on any GPU (wgpu)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the GPU adapters, the one `whir` would use, its features and limits.
    Info {
        /// Adapter to choose: a backend (vulkan, metal, dx12, gl), `index:N`, or part of a name.
        #[arg(long, env = "WHIR_ADAPTER")]
        adapter: Option<String>,
    },
}

fn print_limits(s: &AdapterSummary) {
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!("  features:  {}", if s.feature_names().is_empty() { "none of SHADER_INT64, SUBGROUP, TIMESTAMP_QUERY".into() } else { s.feature_names().join(", ") });
    println!("  subgroup size: {}..={}", s.subgroup_min_size, s.subgroup_max_size);
    println!("  max storage buffer binding: {:.0} MiB", mib(s.max_storage_buffer_binding_size));
    println!("  max buffer size:            {:.0} MiB", mib(s.max_buffer_size));
    println!("  max workgroup storage:      {} bytes", s.max_compute_workgroup_storage_size);
    println!("  max invocations/workgroup:  {}", s.max_compute_invocations_per_workgroup);
    println!("  max workgroups/dimension:   {}", s.max_compute_workgroups_per_dimension);
}

fn info(adapter: Option<String>) -> Result<()> {
    let adapters = list_adapters();
    println!("Adapters ({}):", adapters.len());
    for (i, a) in adapters.iter().enumerate() {
        println!("  [{i}] {a}  [{}]", a.feature_names().join(", "));
    }
    let selector = adapter.as_deref().map_or(AdapterSelector::HighPerformance, AdapterSelector::parse);
    match GpuContext::new(GpuOptions { adapter: selector, mul_variant: None }) {
        Ok(ctx) => {
            println!("\nChosen: {}", ctx.summary());
            println!("  field multiply: {:?}", ctx.mul_variant());
            print_limits(ctx.summary());
        }
        Err(e) => println!("\nNo GPU will be used: {e}\nEverything runs on the CPU (Plonky3)."),
    }
    Ok(())
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Info { adapter } => info(adapter),
    }
}
