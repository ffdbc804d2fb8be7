// #import util/dispatch
// #import field/mul
// #import field/prime
// #import field/ext

// Weights of many slots of a table w in one dispatch, each slot at its own point z_c with its
// own scale s_c (slot c: the 2^k_c entries from entry offset_c):
//   plain:     w[offset_c + i] += s_c * eq(z_c, i)
//   successor: w[offset_c + y] += s_c * (eq(z_c, y - 1) for y >= 1, plus eq(z_c, 2^k_c - 1) at
//              y = 2^k_c - 1): the weight under which sum_y f[offset_c + y] * w(y) is the
//              successor view's value (slot_eval.wgsl).
// eq(z_c, i) = hi[i >> low] * lo[i & (2^low - 1)], both tables built on the host and stored in
// `tables` from hi_at and lo_at (the scale at scale_at). The slots of one dispatch are pairwise
// disjoint (the host layers overlapping ones into separate dispatches), so each entry has one
// writer. Slot c owns workgroups first_c .. first_c + groups_c (`owners` maps each workgroup to
// its slot), each over a run of its entries; the bound segment of w takes the entries that fall in
// it. With reversed_c, the slot holds its entries at bit-reversed indices: entry y of the table is
// the slot's entry rev_k(y).
// A slot is two vec4 words in `slots`: (offset, size, low | successor << 8 | reversed << 16,
// groups), (first, hi_at, lo_at, scale_at).
// Rust twin of the params: `SlotWeightParams` in crates/gpu/src/sumcheck/params.rs.

struct SlotWeightParams {
    // The bound segment of w: its first entry in the whole table, and its entries.
    seg_offset: u32,
    seg_size: u32,
    // Workgroups of the dispatch.
    total_groups: u32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> params: SlotWeightParams;
@group(0) @binding(1) var<storage, read> tables: array<Ext>;
@group(0) @binding(2) var<storage, read> slots: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> owners: array<u32>;
@group(0) @binding(4) var<storage, read_write> w: array<Ext>;

fn eq_at(hi_at: u32, lo_at: u32, low: u32, i: u32) -> Ext {
    return ext_mul(tables[hi_at + (i >> low)], tables[lo_at + (i & ((1u << low) - 1u))]);
}

@compute @workgroup_size(256)
fn add_slot_weights(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let g = linear_workgroup_id(wid, num_wgs);
    if (g >= params.total_groups) {
        return;
    }
    let c = owners[g];
    let a = slots[2u * c];
    let b = slots[2u * c + 1u];
    let offset = a.x;
    let size = a.y;
    let low = a.z & 0xffu;
    let successor = (a.z >> 8u) & 1u;
    let reversed = (a.z >> 16u) & 1u;
    let groups = a.w;
    // (A slot outside the bound segment adds nothing to this dispatch.)
    if (offset >= params.seg_offset + params.seg_size || offset + size <= params.seg_offset) {
        return;
    }
    let scale = tables[b.w];
    // (groups divides size: both powers of two, groups at most size.)
    let run = size / groups;
    let first = (g - b.x) * run;
    for (var t = first + lid; t < first + run; t += 256u) {
        let x = offset + t;
        if (x < params.seg_offset || x - params.seg_offset >= params.seg_size) {
            continue;
        }
        var y = t;
        if (reversed == 1u && size > 1u) {
            y = reverseBits(t) >> (32u - firstTrailingBit(size));
        }
        var weight = ext_zero();
        if (successor == 1u) {
            if (y >= 1u) {
                weight = eq_at(b.y, b.z, low, y - 1u);
            }
            if (y == size - 1u) {
                weight = ext_add(weight, eq_at(b.y, b.z, low, y));
            }
        } else {
            weight = eq_at(b.y, b.z, low, y);
        }
        let at = x - params.seg_offset;
        w[at] = ext_add(w[at], ext_mul(scale, weight));
    }
}
