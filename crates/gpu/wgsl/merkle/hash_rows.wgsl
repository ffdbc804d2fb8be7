// #import util/dispatch
// #import util/gather_params
// #import field/mul
// #import field/prime
// #import merkle/leaf

// Leaf digests of chosen rows, for openings of a tree whose leaf layer was not kept: item t is
// the digest of row idx[idx_offset + t] of the `width`-word-row matrix, written as 8 words at
// dst[dst_offset + 8t] (the gather's layout, util/gather.wgsl, so both fill one buffer).

@group(0) @binding(1) var<uniform> params: GatherParams;
@group(0) @binding(2) var<storage, read> idx: array<u32>;
@group(0) @binding(3) var<storage, read> matrix: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(64)
fn hash_rows(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let t = linear_workgroup_id(wid, num_wgs) * 64u + lid;
    if (t >= params.count) {
        return;
    }
    let st = leaf_row(idx[params.idx_offset + t] * params.width, params.width);
    let at = params.dst_offset + 8u * t;
    dst[at] = st.s0.x;
    dst[at + 1u] = st.s0.y;
    dst[at + 2u] = st.s0.z;
    dst[at + 3u] = st.s0.w;
    dst[at + 4u] = st.s1.x;
    dst[at + 5u] = st.s1.y;
    dst[at + 6u] = st.s1.z;
    dst[at + 7u] = st.s1.w;
}
