//! `whir info`: the fields, the named configurations, the adapters and the one `whir` would
//! use, with its features and limits.

use anyhow::{Context, Result};
use whir_gpu::{list_adapters, plumbing::APPLE_M1_MAX_BUFFER_BYTES, AdapterSelector, AdapterSummary, GpuContext, GpuOptions, LimitsProfile};

use crate::FieldChoice;

fn print_limits(s: &AdapterSummary) {
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!(
        "  features:  {}",
        if s.feature_names().is_empty() { "none of SHADER_INT64, SUBGROUP, TIMESTAMP_QUERY".into() } else { s.feature_names().join(", ") }
    );
    println!("  subgroup size: {}..={}", s.subgroup_min_size, s.subgroup_max_size);
    if !s.timestamp_inside_encoders {
        println!("  GPU profiling: off (no timestamps inside encoders)");
    }
    println!("  max storage buffer binding: {:.0} MiB", mib(s.max_storage_buffer_binding_size));
    println!("  max buffer size:            {:.0} MiB", mib(s.max_buffer_size));
    println!("  max workgroup storage:      {} bytes", s.max_compute_workgroup_storage_size);
    println!("  max invocations/workgroup:  {}", s.max_compute_invocations_per_workgroup);
    println!("  max workgroups/dimension:   {}", s.max_compute_workgroups_per_dimension);
    if s.profile == LimitsProfile::AppleM1 {
        println!(
            "  (an Apple M1 through wgpu's Metal backend has {:.0} MiB buffers and bindings, 32768 bytes of workgroup memory, 1024 invocations, 65535 workgroups; lower figures above are this adapter's)",
            mib(APPLE_M1_MAX_BUFFER_BYTES)
        );
    }
}

/// `whir info`.
pub(crate) fn info(adapter: Option<String>) -> Result<()> {
    println!(
        "Fields (--field): {} (the default) and {}, with Plonky3's default Poseidon2 (width 16 for nodes and the transcript; leaves of width 16 or 24, --leaf-width); extensions (--extension): {} (degree 4: about 100 bits; 5 and 8: 128 bits; all on the GPU)",
        FieldChoice::Babybear.name(),
        FieldChoice::Koalabear.name(),
        whir_verifier::KNOWN_HASHES.iter().map(|(_, _, e)| *e).collect::<Vec<_>>().join(", ")
    );
    println!(
        "Hashes (--hash): poseidon2 (the default) or keccak (Plonky3's Keccak configuration: Keccak trees over u64 lanes and the Keccak-256 transcript, \
         what an EVM verifier checks cheaply; every field and extension, plain, tables or --zk)"
    );
    println!("Named configurations (--config; Poseidon2-16 nodes):");
    for c in whir_verifier::NAMED_CONFIGS {
        println!(
            "  {:<15} {}, {} bits ({}), PoW budget {} bits, Poseidon2-{} leaves: {}",
            c.name,
            c.extension(),
            c.security_bits,
            c.soundness.flag_value(),
            c.pow_bits,
            c.leaf.width(),
            c.about
        );
    }
    let adapters = list_adapters();
    println!("Adapters ({}):", adapters.len());
    for (i, a) in adapters.iter().enumerate() {
        let mut notes = vec![format!("[{}]", a.feature_names().join(", "))];
        if a.is_software() {
            notes.push("software renderer: runs on the CPU".into());
            if let Some(j) = adapters[..i].iter().position(|b| b.is_software() && b.name == a.name) {
                notes.push(format!("same renderer as [{j}]"));
            }
        }
        println!("  [{i}] {a}  {}", notes.join("; "));
    }
    let pool = whir_gpu::pool_adapters(&adapters);
    if pool.is_empty() {
        println!("\nEvery GPU of the host (`whir bench --devices all`): none (no hardware adapter); name adapters by index instead, e.g. --devices 0,0");
    } else {
        let names: Vec<String> = pool.iter().map(|&i| format!("[{i}] {}", adapters[i].name)).collect();
        println!("\nEvery GPU of the host (`whir bench --devices all`, a context each): {}", names.join(", "));
    }
    let explicit = adapter.as_deref().is_some_and(|a| !a.trim().is_empty());
    let selector = adapter.as_deref().map_or(AdapterSelector::HighPerformance, AdapterSelector::parse);
    match GpuContext::new(GpuOptions { adapter: selector, ..GpuOptions::from_env()? }) {
        Ok(ctx) => {
            println!("\nChosen: {}", ctx.summary());
            println!("  limits profile: {} (WHIR_LIMITS: adapter, webgpu, webgpu:BYTES or apple-m1)", ctx.summary().profile);
            println!("  field multiply: {:?}", ctx.mul_variant());
            print_limits(ctx.summary());
            Ok(())
        }
        // An adapter asked for by name that is not there is an error; no adapter at all is
        // what `info` reports.
        Err(e) if explicit => Err(e).context(format!("--adapter / WHIR_ADAPTER {:?}", adapter.unwrap_or_default())),
        Err(e) => {
            println!("\nNo GPU will be used: {e}\nEverything runs on the CPU (Plonky3).");
            Ok(())
        }
    }
}
