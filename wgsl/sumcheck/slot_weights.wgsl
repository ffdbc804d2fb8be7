// #import util/dispatch
// #import field/mul
// #import field/babybear
// #import field/ext4

// Weights of slots of a table w (slot c: the 2^k entries from entry offsets[c]), all at one point
// z with a scale per slot:
//   plain:     w[offsets[c] + i] += scales[c] * eq(z, i)
//   successor: w[offsets[c] + y] += scales[c] * (eq(z, y - 1) for y >= 1, plus eq(z, 2^k - 1) at
//              y = 2^k - 1): the weight under which sum_y f[offsets[c] + y] * w(y) is the
//              successor view's value (slot_eval.wgsl).
// scale_c * eq(z, i) = hi_c[i >> low] * lo[i & (2^low - 1)], both tables built on the host (the
// high table one per slot, scaled): one product per entry. One thread per entry of a slot; the
// bound segment of w takes the entries that fall in it. With `reversed`, each slot holds its
// entries at bit-reversed indices: entry y of the table is the slot's entry rev_k(y).
// Rust twin of the params: `SlotWeightParams` in crates/gpu/src/sumcheck.rs.

struct SlotWeightParams {
    // Entries per slot: 2^k.
    size: u32,
    // Low bits of the split equality table.
    low: u32,
    // Slots in this dispatch.
    count: u32,
    // 1: successor weights.
    successor: u32,
    // The bound segment of w: its first entry in the whole table, and its entries.
    seg_offset: u32,
    seg_size: u32,
    // 1: the slots hold their entries at bit-reversed indices.
    reversed: u32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> params: SlotWeightParams;
// Per slot, its scaled high table (size >> low entries).
@group(0) @binding(1) var<storage, read> hi: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> lo: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> offsets: array<u32>;
@group(0) @binding(4) var<storage, read_write> w: array<vec4<u32>>;

// scale_slot * eq(z, i).
fn eq_at(slot: u32, i: u32) -> vec4<u32> {
    return ext4_mul(hi[slot * (params.size >> params.low) + (i >> params.low)], lo[i & ((1u << params.low) - 1u)]);
}

@compute @workgroup_size(256)
fn add_slot_weights(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let t = linear_workgroup_id(wid, num_wgs) * 256u + lid;
    // (size * count fits in 32 bits: at most the whole table.)
    let slot = t / params.size;
    if (slot >= params.count) {
        return;
    }
    let stored = t % params.size;
    let x = offsets[slot] + stored;
    if (x < params.seg_offset || x - params.seg_offset >= params.seg_size) {
        return;
    }
    var y = stored;
    if (params.reversed == 1u && params.size > 1u) {
        y = reverseBits(stored) >> (32u - firstTrailingBit(params.size));
    }
    var weight = vec4<u32>(0u);
    if (params.successor == 1u) {
        if (y >= 1u) {
            weight = eq_at(slot, y - 1u);
        }
        if (y == params.size - 1u) {
            weight = ext4_add(weight, eq_at(slot, y));
        }
    } else {
        weight = eq_at(slot, y);
    }
    let at = x - params.seg_offset;
    w[at] = ext4_add(w[at], weight);
}
