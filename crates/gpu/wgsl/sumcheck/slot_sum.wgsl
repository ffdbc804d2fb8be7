// #import sumcheck/reduce

// Adds each slot's partial sums (slot_eval.wgsl): workgroup c writes values[c] = the sum over
// segments s and the slot's workgroups g of partials[s * total_groups + first_c + g], with
// first_c and groups_c from the slot's words in `slots` (laid out as slot_eval.wgsl reads them).
// Rust twin of the params: `SlotSumParams` in crates/gpu/src/sumcheck/params.rs.

struct SlotSumParams {
    // Slots.
    count: u32,
    // Workgroups of one segment's evaluation dispatch.
    total_groups: u32,
    // Segments.
    segments: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: SlotSumParams;
@group(0) @binding(1) var<storage, read> partials: array<Ext>;
@group(0) @binding(2) var<storage, read> slots: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> values: array<Ext>;

@compute @workgroup_size(256)
fn sum_slot_partials(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let c = linear_workgroup_id(wid, num_wgs);
    var acc = ext_zero();
    if (c < params.count) {
        let groups = slots[2u * c].w;
        let first = slots[2u * c + 1u].x;
        let per_slot = groups * params.segments;
        for (var t = lid; t < per_slot; t += 256u) {
            let s = t / groups;
            let g = t % groups;
            acc = ext_add(acc, partials[s * params.total_groups + first + g]);
        }
    }
    let total = workgroup_sum_pair(lid, acc, ext_zero());
    if (lid == 0u && c < params.count) {
        values[c] = total[0];
    }
}
