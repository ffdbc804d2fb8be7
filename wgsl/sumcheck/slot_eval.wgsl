// #import sumcheck/reduce

// Evaluations of slots of a table f: slot c is the 2^k entries from entry offsets[c] (one column
// of a stacked table), taken as a multilinear polynomial over {0,1}^k, or a view of it shifted
// by `shift` rows (entry i replaced by entry min(i + shift, 2^k - 1): shift 1 is the successor
// view, the column shifted by one row, the last row repeated). All slots of a dispatch are
// evaluated at one point z:
//   value_c = sum_i f[offsets[c] + s(i)] * eq(z, i),   s(i) = min(i + shift, 2^k - 1),
// with eq(z, i) = hi[i >> low] * lo[i & (2^low - 1)] (coordinate 0 <-> the top bit of i; both
// tables built on the host), summed as sum_h hi[h] * (sum_l f[offsets[c] + s(2^low h + l)] lo[l]):
// a thread sums its share of one row h (one BabyBear x BabyBear^4 product per entry of a
// base-field f) and multiplies by hi[h] once. Each of `groups` workgroups per slot takes a run of
// rows and writes its partial (laid out [segment][slot][group]); slot_sum.wgsl adds them.
// With `reversed`, each slot holds its column at bit-reversed indices (entry s of the column at
// offsets[c] + rev_k(s)): the shifted entry is read there.
// Rust twin of the params: `SlotEvalParams` in crates/gpu/src/sumcheck.rs.

struct SlotEvalParams {
    // Entries per slot: 2^k.
    size: u32,
    // Low bits of the split equality table.
    low: u32,
    // Slots in this dispatch.
    count: u32,
    // Rows each slot's view is shifted by (0: the slot itself, 1: its successor view).
    shift: u32,
    // 1: f holds one BabyBear word per entry; 0: four (BabyBear^4).
    base: u32,
    // Workgroups per slot: a power of two, at most size >> low.
    groups: u32,
    // The bound segment of f: its first entry in the whole table, and its entries.
    seg_offset: u32,
    seg_size: u32,
    // Partials written before this dispatch's.
    first: u32,
    // 1: the slots hold their entries at bit-reversed indices.
    reversed: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: SlotEvalParams;
@group(0) @binding(1) var<storage, read> f: array<u32>;
@group(0) @binding(2) var<storage, read> hi: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> lo: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> offsets: array<u32>;
@group(0) @binding(5) var<storage, read_write> partials: array<vec4<u32>>;

// f at entry x of the whole table times `t`, or zero where x is outside the bound segment.
fn f_times(x: u32, t: vec4<u32>) -> vec4<u32> {
    if (x < params.seg_offset || x - params.seg_offset >= params.seg_size) {
        return vec4<u32>(0u);
    }
    let at = x - params.seg_offset;
    if (params.base == 1u) {
        return ext4_scale(t, f[at]);
    }
    return ext4_mul(vec4<u32>(f[4u * at], f[4u * at + 1u], f[4u * at + 2u], f[4u * at + 3u]), t);
}

@compute @workgroup_size(256)
fn eval_slot_partials(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let g = linear_workgroup_id(wid, num_wgs);
    let slot = g / params.groups;
    var acc = vec4<u32>(0u);
    // (A slot outside the bound segment adds nothing to this dispatch: skipped, not read.)
    let inside = slot < params.count && offsets[min(slot, params.count - 1u)] < params.seg_offset + params.seg_size
        && offsets[min(slot, params.count - 1u)] + params.size > params.seg_offset;
    if (inside) {
        let row_len = 1u << params.low;
        let rows = params.size >> params.low;
        // (groups divides rows: both powers of two, groups at most rows.)
        let run = rows / params.groups;
        let first_row = (g % params.groups) * run;
        let offset = offsets[slot];
        for (var h = first_row; h < first_row + run; h++) {
            var row = vec4<u32>(0u);
            for (var l = lid; l < row_len; l += 256u) {
                let i = (h << params.low) + l;
                var entry = min(i + params.shift, params.size - 1u);
                if (params.reversed == 1u && params.size > 1u) {
                    entry = reverseBits(entry) >> (32u - firstTrailingBit(params.size));
                }
                row = ext4_add(row, f_times(offset + entry, lo[l]));
            }
            acc = ext4_add(acc, ext4_mul(row, hi[h]));
        }
    }
    let total = workgroup_sum_pair(lid, acc, vec4<u32>(0u));
    if (lid == 0u && slot < params.count) {
        partials[params.first + g] = total[0];
    }
}
