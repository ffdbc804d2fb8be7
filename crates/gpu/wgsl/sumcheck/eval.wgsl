// #import sumcheck/reduce

// Evaluations of a table f over {0,1}^m against a weight that factors over 8-bit chunks of the
// index: sum_x f[x] * prod_c T_c[(x >> 8c) & 255]. The multilinear value f(p) = sum_x f[x] eq(p, x)
// has T_c = the equality table of p's coordinates for those bits (built on the host).
//
// The sum is taken row by row, a row being 256 consecutive entries: thread `lid` of a workgroup
// holds entry x = 256 row + lid of each of its rows, whose chunk-0 weight T_0[lid] is then the
// same, so it sums f[x] * T_1[row & 255] over its rows (one base x extension product per
// entry of a base-field f) and multiplies by T_0[lid] and the chunks from 2 up once at the end:
// a workgroup's rows lie within one run of 256 rows, which share every bit from 16 up. One pass
// over f, no scratch tables; each workgroup writes its partial sum (paired with zero, for
// `sum_partials`).
// Rust twin of the params: `EvalParams` in crates/gpu/src/sumcheck/params.rs.

struct EvalParams {
    // Entries of f in this dispatch (a segment of the table): a power of two.
    size: u32,
    // Workgroups launched; workgroup g takes rows g * rows .. (g + 1) * rows of the segment.
    groups: u32,
    // Chunk tables in `tables` (256 entries each), at least one.
    chunks: u32,
    // 1: f holds one base-field word per entry; 0: EXT_WORDS (the extension).
    base: u32,
    // Index of the segment's first entry in the whole table: a multiple of 256 * rows entries,
    // so a workgroup's rows still share every index bit from 16 up.
    offset: u32,
    // Partial pairs before this dispatch's.
    first: u32,
    // Rows per workgroup: a power of two, at most 256.
    rows: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: EvalParams;
@group(0) @binding(1) var<storage, read> f: array<u32>;
@group(0) @binding(2) var<storage, read> tables: array<Ext>;
@group(0) @binding(3) var<storage, read_write> partials: array<Ext>;

// f[x] times `t` (f a base-field or an extension table).
fn f_times(x: u32, t: Ext) -> Ext {
    if (params.base == 1u) {
        return ext_scale(t, f[x]);
    }
    // Straight-line loads (the degree-8 half folds away at degree 4).
    let at = EXT_WORDS * x;
    var hi = vec4<u32>(0u);
    if (EXT_WORDS == 8u) {
        hi = vec4<u32>(f[at + 4u], f[at + 5u], f[at + 6u], f[at + 7u]);
    } else if (EXT_WORDS == 5u) {
        hi = vec4<u32>(f[at + 4u], 0u, 0u, 0u);
    }
    return ext_mul(ext_from_halves(vec4<u32>(f[at], f[at + 1u], f[at + 2u], f[at + 3u]), hi), t);
}

@compute @workgroup_size(256)
fn eval_partials(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let g = linear_workgroup_id(wid, num_wgs);
    var acc = ext_zero();
    if (g < params.groups && lid < params.size) {
        let first_row = g * params.rows;
        // The global row index of this workgroup's first row.
        let row0 = (params.offset >> 8u) + first_row;
        var sum = ext_zero();
        if (params.chunks > 1u) {
            for (var r = 0u; r < params.rows; r++) {
                sum = ext_add(sum, f_times((first_row + r) * 256u + lid, tables[256u + ((row0 + r) & 255u)]));
            }
        } else {
            // One chunk: the table has at most 256 entries, one row.
            sum = f_times(lid, ext_from_base(FP_ONE));
        }
        var w = tables[lid];
        for (var c = 2u; c < params.chunks; c++) {
            w = ext_mul(w, tables[c * 256u + ((row0 >> (8u * (c - 1u))) & 255u)]);
        }
        acc = ext_mul(sum, w);
    }
    let total = workgroup_sum_pair(lid, acc, ext_zero());
    if (lid == 0u) {
        partials[2u * (params.first + g)] = total[0];
        partials[2u * (params.first + g) + 1u] = total[1];
    }
}
