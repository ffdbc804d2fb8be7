// #import util/dispatch

// Plain device copy, four words per thread: the bandwidth reference the NTT kernels are
// measured against.

struct CopyParams {
    words: u32,
}

@group(0) @binding(0) var<uniform> params: CopyParams;
@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<u32>>;

@compute @workgroup_size(256)
fn copy_words(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let i = linear_workgroup_id(wid, num_wgs) * 256u + lid;
    if (i < params.words / 4u) {
        dst[i] = src[i];
    }
}
