// #import util/dispatch
// #import util/gather_params

// Gathers `count` items of `width` words each, item t from src[idx[idx_offset + t] * width ..],
// into dst[dst_offset + t * width ..]: the opened rows of a committed matrix, or the sibling
// digests of one tree layer, in one dispatch instead of one copy command per item.

@group(0) @binding(0) var<uniform> params: GatherParams;
@group(0) @binding(1) var<storage, read> idx: array<u32>;
@group(0) @binding(2) var<storage, read> src: array<u32>;
@group(0) @binding(3) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(256)
fn gather_words(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let i = linear_workgroup_id(wid, num_wgs) * 256u + lid;
    if (i >= params.count * params.width) {
        return;
    }
    let t = i / params.width;
    let k = i % params.width;
    dst[params.dst_offset + i] = src[idx[params.idx_offset + t] * params.width + k];
}
