// #import util/dispatch
// #import field/mul
// #import field/babybear

// One pass of a radix-2 decimation-in-frequency NTT over the columns of a row-major matrix.
//
// The full transform of 2^log_n rows runs DIF stages 0..log_n; this pass runs stages
// stage0 .. stage0 + log_t. Within a pass the work splits into independent sub-problems of
// 2^log_t elements spaced `2^(log_n - stage0 - log_t)` rows apart (times `width` words); a
// workgroup loads 2^log_p neighbouring sub-problems into workgroup memory (neighbours are
// adjacent in memory, so loads and stores are coalesced), runs the log_t stages there, and
// writes them back. Output is in bit-reversed row order; ntt/bit_reverse.wgsl restores it.
//
// Inside the tile, stages go four at a time: each thread holds 16 elements of a sub-problem in
// registers and runs a radix-16 DIF block on them, so a pass of t stages costs t/4 workgroup
// barriers (plus one per leftover stage). Twiddles are factored so that the big table is read
// once per 16 elements: for the 16 elements x_m of a block, stage u's twiddle is
// c^(2^u) · w16^(i·2^u) with c one table entry and w16 the 16th roots of unity.
//
// The first pass of a transform may read a shorter source: rows >= valid_rows are zero and
// are never read (the zero tail of a padded message), and may scale row r by shift^r on the
// way in (a coset transform).
//
// Composed with: const NTT_TILE: u32 (workgroup words, a power of two), and
// const NTT_SKIP_BUTTERFLIES: u32, 1 only in profiling runs that time the memory traffic alone.

// Rust twin: `DifParams` in crates/gpu/src/ntt.rs.
struct DifParams {
    log_n: u32,
    width: u32,
    stage0: u32,
    log_t: u32,
    log_p: u32,
    valid_rows: u32,
    use_shift: u32,
    num_subproblems: u32,
}

@group(0) @binding(0) var<uniform> params: DifParams;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
// twiddles[m] = w^m for m < 2^(log_n - 1), w the 2^log_n-th root of unity (or its inverse).
@group(0) @binding(3) var<storage, read> twiddles: array<u32>;
// shift^r = shift_table[r & 2047] * shift_table[2048 + (r >> 11)].
@group(0) @binding(4) var<storage, read> shift_table: array<u32>;

const WORKGROUP: u32 = 256u;
var<workgroup> tile: array<u32, NTT_TILE>;
// w16[i] = (16th root of unity)^i in the transform's direction.
var<private> w16: array<u32, 8>;

// Tile word for logical index i: rows of 32 words are XOR-swizzled so strided accesses spread
// over the banks.
fn slot(i: u32) -> u32 {
    return i ^ ((i >> 5u) & 31u);
}

fn shift_power(row: u32) -> u32 {
    return bb_mul(shift_table[row & 2047u], shift_table[2048u + (row >> 11u)]);
}

// Four DIF stages on x[0..16] (x[m] at stride s inside a block of 16·s): stage u pairs m with
// m + 8/2^u, twiddle c^(2^u) · w16[(m mod 8/2^u) · 2^u].
fn radix16(x: ptr<function, array<u32, 16>>, c0: u32) {
    var c = c0;
    for (var u = 0u; u < 4u; u++) {
        let h = 8u >> u;
        for (var m = 0u; m < 16u; m++) {
            if ((m & h) == 0u) {
                let i = m & (h - 1u);
                var tw = c;
                if (i != 0u) {
                    tw = bb_mul(c, w16[i << u]);
                }
                let a = (*x)[m];
                let b = (*x)[m + h];
                (*x)[m] = bb_add(a, b);
                (*x)[m + h] = bb_mul(bb_sub(a, b), tw);
            }
        }
        c = bb_square(c);
    }
}

@compute @workgroup_size(256)
fn dif_pass(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let wg = linear_workgroup_id(wid, num_wgs);
    let log_p = params.log_p;
    let log_t = params.log_t;
    let p_count = 1u << log_p; // <= WORKGROUP, so each thread keeps one sub-problem slot
    let t_count = 1u << log_t;
    let p_local = lid & (p_count - 1u);
    let lanes = WORKGROUP >> log_p; // threads per sub-problem
    let j_first = lid >> log_p;
    let p = wg * p_count + p_local;
    let in_range = p < params.num_subproblems;

    // log2 of the row distance between neighbouring elements of a sub-problem.
    let srl = params.log_n - params.stage0 - log_t;
    let stride_flat = params.width << srl;
    let blk = p / stride_flat;
    let off = p - blk * stride_flat;
    let off_row = off / params.width;
    let base = blk * (stride_flat << log_t) + off;
    let row_base = (blk << (params.log_n - params.stage0)) + off_row;

    if (params.log_n >= 4u) {
        for (var i = 0u; i < 8u; i++) {
            w16[i] = twiddles[i << (params.log_n - 4u)];
        }
    }

    for (var j = j_first; j < t_count; j += lanes) {
        var v = 0u;
        let row = row_base + (j << srl);
        if (in_range && row < params.valid_rows) {
            v = src[base + j * stride_flat];
            if (params.use_shift != 0u) {
                v = bb_mul(v, shift_power(row));
            }
        }
        tile[slot((j << log_p) + p_local)] = v;
    }
    workgroupBarrier();

    // Radix-16 rounds: round r covers pass stages 4r..4r+4, on blocks of 2^(log_t - 4r) elements.
    var rounds = log_t / 4u;
    var leftover_end = log_t;
    if (NTT_SKIP_BUTTERFLIES != 0u) {
        rounds = 0u;
        leftover_end = 0u;
    }
    let items = select(0u, 1u << (log_p + log_t - 4u), rounds > 0u); // 16 elements each
    for (var r = 0u; r < rounds; r++) {
        let block_log = log_t - 4u * r;
        let lo_log = block_log - 4u;
        let stage = params.stage0 + 4u * r;
        for (var item = lid; item < items; item += WORKGROUP) {
            let rest = item >> log_p;
            let lo = rest & ((1u << lo_log) - 1u);
            let hi = rest >> lo_log;
            let j0 = (hi << block_log) + lo;
            var x: array<u32, 16>;
            for (var m = 0u; m < 16u; m++) {
                x[m] = tile[slot(((j0 + (m << lo_log)) << log_p) + p_local)];
            }
            radix16(&x, twiddles[((lo << srl) + off_row) << stage]);
            for (var m = 0u; m < 16u; m++) {
                tile[slot(((j0 + (m << lo_log)) << log_p) + p_local)] = x[m];
            }
        }
        workgroupBarrier();
    }

    // Leftover stages one at a time. Twiddle of pair (j, j + h) at stage s:
    // w^(off_row·2^s) · w^((j mod h)·2^(log_n - log_t + u)); the first factor is per thread.
    var c = BB_ONE;
    if (srl != 0u) {
        c = twiddles[off_row << params.stage0];
        for (var u = 0u; u < 4u * rounds; u++) {
            c = bb_square(c);
        }
    }
    let half_count = t_count >> 1u;
    for (var u = 4u * rounds; u < leftover_end; u++) {
        let stage = params.stage0 + u;
        let h_log = log_t - 1u - u;
        let h = 1u << h_log;
        let small_log = params.log_n - log_t + u;
        for (var q = j_first; q < half_count; q += lanes) {
            let lo = q & (h - 1u);
            let j = ((q >> h_log) << (h_log + 1u)) + lo;
            let i0 = slot((j << log_p) + p_local);
            let i1 = slot(((j + h) << log_p) + p_local);
            let a = tile[i0];
            let b = tile[i1];
            var tw = twiddles[lo << small_log];
            if (srl != 0u) {
                tw = bb_mul(tw, c);
            }
            tile[i0] = bb_add(a, b);
            tile[i1] = bb_mul(bb_sub(a, b), tw);
        }
        c = bb_square(c);
        workgroupBarrier();
    }

    if (in_range) {
        for (var j = j_first; j < t_count; j += lanes) {
            dst[base + j * stride_flat] = tile[slot((j << log_p) + p_local)];
        }
    }
}
