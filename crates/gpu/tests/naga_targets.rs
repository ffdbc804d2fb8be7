//! Every kernel, over every field (and every extension it is composed over) and in every
//! multiply variant (Keccak kernels in both lane builds), parses and validates with naga
//! and translates to MSL (Metal), HLSL (DX12) and SPIR-V (Vulkan), so no backend can silently rot.

use naga::back::{hlsl, msl, spv};
use naga::valid::{Capabilities, ValidationFlags, Validator};
use whir_gpu::shaders::{compose_kernel, compose_kernel_with, KeccakLanes, Kernel, MulVariant};
use whir_gpu::{field::ExtensionId, field::FieldId};

/// Every kernel over every field and every extension it is composed over.
fn instances() -> impl Iterator<Item = (Kernel, FieldId, ExtensionId)> {
    Kernel::ALL.into_iter().flat_map(|k| FieldId::ALL.into_iter().flat_map(move |f| k.extensions().iter().map(move |&e| (k, f, e))))
}

#[test]
fn every_kernel_validates_and_cross_compiles() {
    for (kernel, field, ext) in instances() {
        for variant in MulVariant::ALL {
            let name = format!("{} ({}, {}, {variant:?})", kernel.source_name(), field.name(), ext.name());
            let src = compose_kernel(field, ext, kernel, variant, kernel.default_consts()).unwrap();
            validate_and_translate(&name, &src, variant);
            // The u64 multiply with `vec2<u32>` Keccak lanes (every context's default), where
            // the kernel holds Keccak lanes.
            let vec2 = compose_kernel_with(field, ext, kernel, variant, KeccakLanes::Vec2, kernel.default_consts()).unwrap();
            if vec2 != src {
                validate_and_translate(&format!("{name} with vec2 Keccak lanes"), &vec2, variant);
            }
        }
    }
}

/// `src` (composed with `variant`'s multiply) parses, validates with the capabilities the
/// variant needs (the emulated one with none), and translates to MSL, HLSL and SPIR-V.
fn validate_and_translate(name: &str, src: &str, variant: MulVariant) {
    let module = naga::front::wgsl::parse_str(src).unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(src)));
    let caps = match variant {
        MulVariant::U64 => Capabilities::SHADER_INT64,
        MulVariant::Emulated => Capabilities::empty(),
    } | Capabilities::SUBGROUP;
    let info = Validator::new(ValidationFlags::all(), caps).validate(&module).unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(src)));
    // The emulated variant must not need 64-bit integers anywhere.
    if variant == MulVariant::Emulated {
        Validator::new(ValidationFlags::all(), Capabilities::SUBGROUP).validate(&module).unwrap_or_else(|e| panic!("{name} needs more than base WGSL: {e}"));
    }

    let msl_opts = msl::Options { lang_version: (2, 3), ..Default::default() };
    let msl_pipe = msl::PipelineOptions::default();
    msl::write_string(&module, &info, &msl_opts, &msl_pipe).unwrap_or_else(|e| panic!("{name} -> MSL: {e}"));

    let hlsl_opts = hlsl::Options { shader_model: hlsl::ShaderModel::V6_0, ..Default::default() };
    let mut hlsl_out = String::new();
    hlsl::Writer::new(&mut hlsl_out, &hlsl_opts, &hlsl::PipelineOptions::default())
        .write(&module, &info, None)
        .unwrap_or_else(|e| panic!("{name} -> HLSL: {e}"));

    let spv_opts = spv::Options::default();
    spv::write_vec(&module, &info, &spv_opts, None).unwrap_or_else(|e| panic!("{name} -> SPIR-V: {e}"));
}

/// The strict profile (WebGPU's defaults, `WHIR_LIMITS=webgpu`): with the emulated multiply and
/// the NTT tile a 16 KiB adapter gets, every kernel validates without optional capabilities (no
/// 64-bit integers, no subgroups), keeps its workgroup memory within 16 KiB and its workgroups
/// within 256 invocations, and still translates to MSL and HLSL.
#[test]
fn every_kernel_fits_webgpu_default_limits() {
    for (kernel, field, ext) in instances() {
        let consts: Vec<(&str, u32)> = kernel.default_consts().iter().map(|&(k, v)| if k == "NTT_TILE" { (k, 4096) } else { (k, v) }).collect();
        let name = format!("{} ({}, {}, strict)", kernel.source_name(), field.name(), ext.name());
        let src = compose_kernel(field, ext, kernel, MulVariant::Emulated, &consts).unwrap();
        let module = naga::front::wgsl::parse_str(&src).unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(&src)));
        let info = Validator::new(ValidationFlags::all(), Capabilities::empty())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{name} needs an optional capability: {}", e.emit_to_string(&src)));
        let mut layouter = naga::proc::Layouter::default();
        layouter.update(module.to_ctx()).expect("layout");
        let workgroup_bytes: u32 =
            module.global_variables.iter().filter(|(_, v)| v.space == naga::AddressSpace::WorkGroup).map(|(_, v)| layouter[v.ty].size).sum();
        assert!(workgroup_bytes <= 16384, "{name}: {workgroup_bytes} bytes of workgroup memory");
        for ep in &module.entry_points {
            let invocations: u32 = ep.workgroup_size.iter().product();
            assert!(invocations <= 256, "{name}::{}: {invocations} invocations per workgroup", ep.name);
        }
        let msl_opts = msl::Options { lang_version: (2, 3), ..Default::default() };
        msl::write_string(&module, &info, &msl_opts, &msl::PipelineOptions::default()).unwrap_or_else(|e| panic!("{name} -> MSL: {e}"));
        let hlsl_opts = hlsl::Options { shader_model: hlsl::ShaderModel::V6_0, ..Default::default() };
        let mut hlsl_out = String::new();
        hlsl::Writer::new(&mut hlsl_out, &hlsl_opts, &hlsl::PipelineOptions::default())
            .write(&module, &info, None)
            .unwrap_or_else(|e| panic!("{name} -> HLSL: {e}"));
    }
}
