// #import sumcheck/reduce

// Evaluations of many slots of a table f in one dispatch: slot c is the 2^k_c entries from entry
// offset_c (one column of a stacked table), taken as a multilinear polynomial over {0,1}^k_c, or
// a view of it shifted by shift_c rows (entry i replaced by entry min(i + shift_c, 2^k_c - 1):
// shift 1 is the successor view, the column shifted by one row, the last row repeated), at its
// own point z_c:
//   value_c = sum_i f[offset_c + s(i)] * eq(z_c, i),   s(i) = min(i + shift_c, 2^k_c - 1),
// with eq(z_c, i) = hi[i >> low] * lo[i & (2^low - 1)] (coordinate 0 <-> the top bit of i; both
// tables built on the host and stored in `tables` from hi_at and lo_at), summed as
// sum_h hi[h] * (sum_l f[offset_c + s(2^low h + l)] lo[l]): a thread sums its share of one row h
// (one base x extension product per entry of a base-field f) and multiplies by hi[h] once.
// Slot c owns workgroups first_c .. first_c + groups_c (`owners` maps each workgroup to its slot);
// each takes a run of rows and writes its partial to partials[segment * total_groups + workgroup];
// slot_sum.wgsl adds them. With reversed_c, the slot holds its column at bit-reversed indices
// (entry s of the column at offset_c + rev_k(s)): the shifted entry is read there.
// A slot is two vec4 words in `slots`: (offset, size, low | shift << 8 | reversed << 16, groups),
// (first, hi_at, lo_at, 0).
// Rust twin of the params: `SlotEvalParams` in crates/gpu/src/sumcheck/params.rs.

struct SlotEvalParams {
    // 1: f holds one base-field word per entry; 0: EXT_WORDS (the extension).
    base: u32,
    // The bound segment of f: its first entry in the whole table, and its entries.
    seg_offset: u32,
    seg_size: u32,
    // The segment's index, and the workgroups of one segment's dispatch.
    segment: u32,
    total_groups: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: SlotEvalParams;
@group(0) @binding(1) var<storage, read> f: array<u32>;
@group(0) @binding(2) var<storage, read> tables: array<Ext>;
@group(0) @binding(3) var<storage, read> slots: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> owners: array<u32>;
@group(0) @binding(5) var<storage, read_write> partials: array<Ext>;

// f at entry x of the whole table times `t`, or zero where x is outside the bound segment.
fn f_times(x: u32, t: Ext) -> Ext {
    if (x < params.seg_offset || x - params.seg_offset >= params.seg_size) {
        return ext_zero();
    }
    let at = x - params.seg_offset;
    if (params.base == 1u) {
        return ext_scale(t, f[at]);
    }
    // Straight-line loads (the degree-8 half folds away at degree 4).
    let w = EXT_WORDS * at;
    var hi = vec4<u32>(0u);
    if (EXT_WORDS == 8u) {
        hi = vec4<u32>(f[w + 4u], f[w + 5u], f[w + 6u], f[w + 7u]);
    } else if (EXT_WORDS == 5u) {
        hi = vec4<u32>(f[w + 4u], 0u, 0u, 0u);
    }
    return ext_mul(ext_from_halves(vec4<u32>(f[w], f[w + 1u], f[w + 2u], f[w + 3u]), hi), t);
}

@compute @workgroup_size(256)
fn eval_slot_partials(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let g = linear_workgroup_id(wid, num_wgs);
    let live = g < params.total_groups;
    let c = owners[min(g, params.total_groups - 1u)];
    let a = slots[2u * c];
    let b = slots[2u * c + 1u];
    let offset = a.x;
    let size = a.y;
    let low = a.z & 0xffu;
    let shift = (a.z >> 8u) & 0xffu;
    let reversed = (a.z >> 16u) & 1u;
    let groups = a.w;
    var acc = ext_zero();
    // (A slot outside the bound segment adds nothing to this dispatch: skipped, not read.)
    let inside = live && offset < params.seg_offset + params.seg_size && offset + size > params.seg_offset;
    if (inside) {
        let row_len = 1u << low;
        let rows = size >> low;
        // (groups divides rows: both powers of two, groups at most rows.)
        let run = rows / groups;
        let first_row = (g - b.x) * run;
        for (var h = first_row; h < first_row + run; h++) {
            var row = ext_zero();
            for (var l = lid; l < row_len; l += 256u) {
                let i = (h << low) + l;
                var entry = min(i + shift, size - 1u);
                if (reversed == 1u && size > 1u) {
                    entry = reverseBits(entry) >> (32u - firstTrailingBit(size));
                }
                row = ext_add(row, f_times(offset + entry, tables[b.z + l]));
            }
            acc = ext_add(acc, ext_mul(row, tables[b.y + h]));
        }
    }
    let total = workgroup_sum_pair(lid, acc, ext_zero());
    if (lid == 0u && live) {
        partials[params.segment * params.total_groups + g] = total[0];
    }
}
