//! Every kernel, in every multiply variant, parses and validates with naga and translates to
//! MSL (Metal), HLSL (DX12) and SPIR-V (Vulkan), so no backend can silently rot.

use naga::back::{hlsl, msl, spv};
use naga::valid::{Capabilities, ValidationFlags, Validator};
use whir_wgpu::gpu::shaders::{compose, Kernel, MulVariant};

#[test]
fn every_kernel_validates_and_cross_compiles() {
    for kernel in Kernel::ALL {
        for variant in MulVariant::ALL {
            let name = format!("{} ({variant:?})", kernel.source_name());
            let src = compose(kernel.source_name(), variant, kernel.default_consts()).unwrap();
            let module = naga::front::wgsl::parse_str(&src)
                .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(&src)));
            let caps = match variant {
                MulVariant::U64 => Capabilities::SHADER_INT64,
                MulVariant::Emulated => Capabilities::empty(),
            } | Capabilities::SUBGROUP;
            let info = Validator::new(ValidationFlags::all(), caps)
                .validate(&module)
                .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(&src)));
            // The emulated variant must not need 64-bit integers anywhere.
            if variant == MulVariant::Emulated {
                Validator::new(ValidationFlags::all(), Capabilities::SUBGROUP)
                    .validate(&module)
                    .unwrap_or_else(|e| panic!("{name} needs more than base WGSL: {e}"));
            }

            let msl_opts = msl::Options { lang_version: (2, 3), ..Default::default() };
            let msl_pipe = msl::PipelineOptions::default();
            msl::write_string(&module, &info, &msl_opts, &msl_pipe)
                .unwrap_or_else(|e| panic!("{name} -> MSL: {e}"));

            let hlsl_opts = hlsl::Options { shader_model: hlsl::ShaderModel::V6_0, ..Default::default() };
            let mut hlsl_out = String::new();
            hlsl::Writer::new(&mut hlsl_out, &hlsl_opts, &hlsl::PipelineOptions::default())
                .write(&module, &info, None)
                .unwrap_or_else(|e| panic!("{name} -> HLSL: {e}"));

            let spv_opts = spv::Options::default();
            spv::write_vec(&module, &info, &spv_opts, None).unwrap_or_else(|e| panic!("{name} -> SPIR-V: {e}"));
        }
    }
}
