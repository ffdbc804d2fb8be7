// #import util/dispatch
// #import field/mul
// #import field/prime

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
// Composed with: const NTT_TILE: u32 (workgroup words, a power of two),
// const NTT_SKIP_BUTTERFLIES: u32, 1 only in profiling runs that time the memory traffic alone,
// and const NTT_IN_PLACE: u32, 1 for a pass that reads `dst` itself (`src` is then a placeholder):
// a workgroup writes back exactly the elements it read, and no other workgroup touches them.

// Rust twin: `DifParams` in crates/gpu/src/ntt/plan.rs.
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

// Tile word for logical index i: rows of 32 words are XOR-swizzled so strided accesses spread
// over the banks.
fn slot(i: u32) -> u32 {
    return i ^ ((i >> 5u) & 31u);
}

fn shift_power(row: u32) -> u32 {
    return fp_mul(shift_table[row & 2047u], shift_table[2048u + (row >> 11u)]);
}

// Four DIF stages on x[0..16] (x[m] at stride s inside a block of 16·s): stage u pairs m with
// m + 8/2^u, twiddle c^(2^u) · w16[(m mod 8/2^u) · 2^u]. Written out in full (generated) so
// every index is a constant and x stays in registers.
// w16[i] = (16th root of unity)^i in the transform's direction, i < 8: lo = w16[0..4], hi = w16[4..8].
fn radix16(x: ptr<function, array<u32, 16>>, c0: u32, lo: vec4<u32>, hi: vec4<u32>) {
    let w16 = array<u32, 8>(lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
    let c1 = fp_square(c0);
    let c2 = fp_square(c1);
    let c3 = fp_square(c2);
    // stage 0: pairs at distance 8
    let t0_1 = fp_mul(c0, w16[1]);
    let t0_2 = fp_mul(c0, w16[2]);
    let t0_3 = fp_mul(c0, w16[3]);
    let t0_4 = fp_mul(c0, w16[4]);
    let t0_5 = fp_mul(c0, w16[5]);
    let t0_6 = fp_mul(c0, w16[6]);
    let t0_7 = fp_mul(c0, w16[7]);
    { let a = (*x)[0]; let b = (*x)[8]; (*x)[0] = fp_add(a, b); (*x)[8] = fp_mul(fp_sub(a, b), c0); }
    { let a = (*x)[1]; let b = (*x)[9]; (*x)[1] = fp_add(a, b); (*x)[9] = fp_mul(fp_sub(a, b), t0_1); }
    { let a = (*x)[2]; let b = (*x)[10]; (*x)[2] = fp_add(a, b); (*x)[10] = fp_mul(fp_sub(a, b), t0_2); }
    { let a = (*x)[3]; let b = (*x)[11]; (*x)[3] = fp_add(a, b); (*x)[11] = fp_mul(fp_sub(a, b), t0_3); }
    { let a = (*x)[4]; let b = (*x)[12]; (*x)[4] = fp_add(a, b); (*x)[12] = fp_mul(fp_sub(a, b), t0_4); }
    { let a = (*x)[5]; let b = (*x)[13]; (*x)[5] = fp_add(a, b); (*x)[13] = fp_mul(fp_sub(a, b), t0_5); }
    { let a = (*x)[6]; let b = (*x)[14]; (*x)[6] = fp_add(a, b); (*x)[14] = fp_mul(fp_sub(a, b), t0_6); }
    { let a = (*x)[7]; let b = (*x)[15]; (*x)[7] = fp_add(a, b); (*x)[15] = fp_mul(fp_sub(a, b), t0_7); }
    // stage 1: pairs at distance 4
    let t1_1 = fp_mul(c1, w16[2]);
    let t1_2 = fp_mul(c1, w16[4]);
    let t1_3 = fp_mul(c1, w16[6]);
    { let a = (*x)[0]; let b = (*x)[4]; (*x)[0] = fp_add(a, b); (*x)[4] = fp_mul(fp_sub(a, b), c1); }
    { let a = (*x)[1]; let b = (*x)[5]; (*x)[1] = fp_add(a, b); (*x)[5] = fp_mul(fp_sub(a, b), t1_1); }
    { let a = (*x)[2]; let b = (*x)[6]; (*x)[2] = fp_add(a, b); (*x)[6] = fp_mul(fp_sub(a, b), t1_2); }
    { let a = (*x)[3]; let b = (*x)[7]; (*x)[3] = fp_add(a, b); (*x)[7] = fp_mul(fp_sub(a, b), t1_3); }
    { let a = (*x)[8]; let b = (*x)[12]; (*x)[8] = fp_add(a, b); (*x)[12] = fp_mul(fp_sub(a, b), c1); }
    { let a = (*x)[9]; let b = (*x)[13]; (*x)[9] = fp_add(a, b); (*x)[13] = fp_mul(fp_sub(a, b), t1_1); }
    { let a = (*x)[10]; let b = (*x)[14]; (*x)[10] = fp_add(a, b); (*x)[14] = fp_mul(fp_sub(a, b), t1_2); }
    { let a = (*x)[11]; let b = (*x)[15]; (*x)[11] = fp_add(a, b); (*x)[15] = fp_mul(fp_sub(a, b), t1_3); }
    // stage 2: pairs at distance 2
    let t2_1 = fp_mul(c2, w16[4]);
    { let a = (*x)[0]; let b = (*x)[2]; (*x)[0] = fp_add(a, b); (*x)[2] = fp_mul(fp_sub(a, b), c2); }
    { let a = (*x)[1]; let b = (*x)[3]; (*x)[1] = fp_add(a, b); (*x)[3] = fp_mul(fp_sub(a, b), t2_1); }
    { let a = (*x)[4]; let b = (*x)[6]; (*x)[4] = fp_add(a, b); (*x)[6] = fp_mul(fp_sub(a, b), c2); }
    { let a = (*x)[5]; let b = (*x)[7]; (*x)[5] = fp_add(a, b); (*x)[7] = fp_mul(fp_sub(a, b), t2_1); }
    { let a = (*x)[8]; let b = (*x)[10]; (*x)[8] = fp_add(a, b); (*x)[10] = fp_mul(fp_sub(a, b), c2); }
    { let a = (*x)[9]; let b = (*x)[11]; (*x)[9] = fp_add(a, b); (*x)[11] = fp_mul(fp_sub(a, b), t2_1); }
    { let a = (*x)[12]; let b = (*x)[14]; (*x)[12] = fp_add(a, b); (*x)[14] = fp_mul(fp_sub(a, b), c2); }
    { let a = (*x)[13]; let b = (*x)[15]; (*x)[13] = fp_add(a, b); (*x)[15] = fp_mul(fp_sub(a, b), t2_1); }
    // stage 3: pairs at distance 1
    { let a = (*x)[0]; let b = (*x)[1]; (*x)[0] = fp_add(a, b); (*x)[1] = fp_mul(fp_sub(a, b), c3); }
    { let a = (*x)[2]; let b = (*x)[3]; (*x)[2] = fp_add(a, b); (*x)[3] = fp_mul(fp_sub(a, b), c3); }
    { let a = (*x)[4]; let b = (*x)[5]; (*x)[4] = fp_add(a, b); (*x)[5] = fp_mul(fp_sub(a, b), c3); }
    { let a = (*x)[6]; let b = (*x)[7]; (*x)[6] = fp_add(a, b); (*x)[7] = fp_mul(fp_sub(a, b), c3); }
    { let a = (*x)[8]; let b = (*x)[9]; (*x)[8] = fp_add(a, b); (*x)[9] = fp_mul(fp_sub(a, b), c3); }
    { let a = (*x)[10]; let b = (*x)[11]; (*x)[10] = fp_add(a, b); (*x)[11] = fp_mul(fp_sub(a, b), c3); }
    { let a = (*x)[12]; let b = (*x)[13]; (*x)[12] = fp_add(a, b); (*x)[13] = fp_mul(fp_sub(a, b), c3); }
    { let a = (*x)[14]; let b = (*x)[15]; (*x)[14] = fp_add(a, b); (*x)[15] = fp_mul(fp_sub(a, b), c3); }
}

// Element j of this thread's sub-problem from the source (0 past the valid rows or the tile),
// scaled by shift^row for a coset transform.
fn load_element(j: u32, t_count: u32, in_range: bool, base: u32, stride_flat: u32, row_base: u32, srl: u32) -> u32 {
    let row = row_base + (j << srl);
    if (j >= t_count || !in_range || row >= params.valid_rows) {
        return 0u;
    }
    var v: u32;
    if (NTT_IN_PLACE != 0u) {
        v = dst[base + j * stride_flat];
    } else {
        v = src[base + j * stride_flat];
    }
    if (params.use_shift != 0u) {
        return fp_mul(v, shift_power(row));
    }
    return v;
}

fn store_tile(j: u32, t_count: u32, log_p: u32, p_local: u32, v: u32) {
    if (j < t_count) {
        tile[slot((j << log_p) + p_local)] = v;
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

    // Loads go four at a time into scalars before any is stored, so several loads per thread
    // are in flight (one load-then-store per iteration is latency bound; sixteen at a time
    // measured no faster: docs/benchmarks-history.md).
    for (var j = j_first; j < t_count; j += 4u * lanes) {
        let v0 = load_element(j, t_count, in_range, base, stride_flat, row_base, srl);
        let v1 = load_element(j + lanes, t_count, in_range, base, stride_flat, row_base, srl);
        let v2 = load_element(j + 2u * lanes, t_count, in_range, base, stride_flat, row_base, srl);
        let v3 = load_element(j + 3u * lanes, t_count, in_range, base, stride_flat, row_base, srl);
        store_tile(j, t_count, log_p, p_local, v0);
        store_tile(j + lanes, t_count, log_p, p_local, v1);
        store_tile(j + 2u * lanes, t_count, log_p, p_local, v2);
        store_tile(j + 3u * lanes, t_count, log_p, p_local, v3);
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
    // 16th roots of unity from the table (any transform with a radix-16 round has log_n >= 4).
    var w16_lo = vec4<u32>(FP_ONE);
    var w16_hi = vec4<u32>(FP_ONE);
    if (rounds > 0u) {
        let sh = params.log_n - 4u;
        w16_lo = vec4<u32>(twiddles[0], twiddles[1u << sh], twiddles[2u << sh], twiddles[3u << sh]);
        w16_hi = vec4<u32>(twiddles[4u << sh], twiddles[5u << sh], twiddles[6u << sh], twiddles[7u << sh]);
    }
    for (var r = 0u; r < rounds; r++) {
        let block_log = log_t - 4u * r;
        let lo_log = block_log - 4u;
        let stage = params.stage0 + 4u * r;
        for (var item = lid; item < items; item += WORKGROUP) {
            let rest = item >> log_p;
            let lo = rest & ((1u << lo_log) - 1u);
            let hi = rest >> lo_log;
            let j0 = (hi << block_log) + lo;
            // Element m of the block sits at i0 + m·d; constant indices keep x in registers.
            let i0 = (j0 << log_p) + p_local;
            let d = 1u << (lo_log + log_p);
            var x = array<u32, 16>(
                tile[slot(i0 + 0u * d)],
                tile[slot(i0 + 1u * d)],
                tile[slot(i0 + 2u * d)],
                tile[slot(i0 + 3u * d)],
                tile[slot(i0 + 4u * d)],
                tile[slot(i0 + 5u * d)],
                tile[slot(i0 + 6u * d)],
                tile[slot(i0 + 7u * d)],
                tile[slot(i0 + 8u * d)],
                tile[slot(i0 + 9u * d)],
                tile[slot(i0 + 10u * d)],
                tile[slot(i0 + 11u * d)],
                tile[slot(i0 + 12u * d)],
                tile[slot(i0 + 13u * d)],
                tile[slot(i0 + 14u * d)],
                tile[slot(i0 + 15u * d)],
            );
            radix16(&x, twiddles[((lo << srl) + off_row) << stage], w16_lo, w16_hi);
            tile[slot(i0 + 0u * d)] = x[0];
            tile[slot(i0 + 1u * d)] = x[1];
            tile[slot(i0 + 2u * d)] = x[2];
            tile[slot(i0 + 3u * d)] = x[3];
            tile[slot(i0 + 4u * d)] = x[4];
            tile[slot(i0 + 5u * d)] = x[5];
            tile[slot(i0 + 6u * d)] = x[6];
            tile[slot(i0 + 7u * d)] = x[7];
            tile[slot(i0 + 8u * d)] = x[8];
            tile[slot(i0 + 9u * d)] = x[9];
            tile[slot(i0 + 10u * d)] = x[10];
            tile[slot(i0 + 11u * d)] = x[11];
            tile[slot(i0 + 12u * d)] = x[12];
            tile[slot(i0 + 13u * d)] = x[13];
            tile[slot(i0 + 14u * d)] = x[14];
            tile[slot(i0 + 15u * d)] = x[15];
        }
        workgroupBarrier();
    }

    // Leftover stages one at a time. Twiddle of pair (j, j + h) at stage s:
    // w^(off_row·2^s) · w^((j mod h)·2^(log_n - log_t + u)); the first factor is per thread.
    var c = FP_ONE;
    if (srl != 0u) {
        c = twiddles[off_row << params.stage0];
        for (var u = 0u; u < 4u * rounds; u++) {
            c = fp_square(c);
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
                tw = fp_mul(tw, c);
            }
            tile[i0] = fp_add(a, b);
            tile[i1] = fp_mul(fp_sub(a, b), tw);
        }
        c = fp_square(c);
        workgroupBarrier();
    }

    if (in_range) {
        for (var j = j_first; j < t_count; j += lanes) {
            dst[base + j * stride_flat] = tile[slot((j << log_p) + p_local)];
        }
    }
}
