// #import sumcheck/reduce

// Adds each slot's partial sums (slot_eval.wgsl, laid out [segment][slot][group]): workgroup c
// writes values[first + c] = sum over segments s and groups g of partials[(s * count + c) * groups + g].
// Rust twin of the params: `SlotSumParams` in crates/gpu/src/sumcheck.rs.

struct SlotSumParams {
    // Slots.
    count: u32,
    // Partials per slot and segment.
    groups: u32,
    // Segments.
    segments: u32,
    // Values written before this dispatch's.
    first: u32,
}

@group(0) @binding(0) var<uniform> params: SlotSumParams;
@group(0) @binding(1) var<storage, read> partials: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> values: array<vec4<u32>>;

@compute @workgroup_size(256)
fn sum_slot_partials(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let c = linear_workgroup_id(wid, num_wgs);
    var acc = vec4<u32>(0u);
    if (c < params.count) {
        let per_slot = params.groups * params.segments;
        for (var t = lid; t < per_slot; t += 256u) {
            let s = t / params.groups;
            let g = t % params.groups;
            acc = ext4_add(acc, partials[(s * params.count + c) * params.groups + g]);
        }
    }
    let total = workgroup_sum_pair(lid, acc, vec4<u32>(0u));
    if (lid == 0u && c < params.count) {
        values[params.first + c] = total[0];
    }
}
