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
// The first pass of a transform may read a shorter source: rows >= valid_rows are zero and
// are never read (the zero tail of a padded message), and may scale row r by shift^r on the
// way in (a coset transform).
//
// Composed with: const NTT_TILE: u32 (workgroup words, a power of two).

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

fn shift_power(row: u32) -> u32 {
    return bb_mul(shift_table[row & 2047u], shift_table[2048u + (row >> 11u)]);
}

@compute @workgroup_size(256)
fn dif_pass(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let wg = linear_workgroup_id(wid, num_wgs);
    let p_count = 1u << params.log_p; // <= WORKGROUP
    let t_count = 1u << params.log_t;
    let p_local = lid & (p_count - 1u);
    let lanes = WORKGROUP >> params.log_p; // threads per sub-problem
    let j_first = lid >> params.log_p;
    let p = wg * p_count + p_local;
    let in_range = p < params.num_subproblems;

    let stride_rows_log = params.log_n - params.stage0 - params.log_t;
    let stride_flat = params.width << stride_rows_log;
    let blk = p / stride_flat;
    let off = p - blk * stride_flat;
    let off_row = off / params.width;
    let base = blk * (stride_flat << params.log_t) + off;
    let row_base = (blk << (params.log_n - params.stage0)) + off_row;

    for (var j = j_first; j < t_count; j += lanes) {
        var v = 0u;
        let row = row_base + (j << stride_rows_log);
        if (in_range && row < params.valid_rows) {
            v = src[base + j * stride_flat];
            if (params.use_shift != 0u) {
                v = bb_mul(v, shift_power(row));
            }
        }
        tile[(j << params.log_p) + p_local] = v;
    }
    workgroupBarrier();

    let half_count = t_count >> 1u;
    for (var u = 0u; u < params.log_t; u++) {
        let stage = params.stage0 + u;
        let h_log = params.log_t - 1u - u;
        let h = 1u << h_log;
        for (var q = j_first; q < half_count; q += lanes) {
            let lo = q & (h - 1u);
            let j = ((q >> h_log) << (h_log + 1u)) + lo;
            let i0 = (j << params.log_p) + p_local;
            let i1 = ((j + h) << params.log_p) + p_local;
            let a = tile[i0];
            let b = tile[i1];
            // Position of this pair inside its butterfly block, as a power of the 2^log_n-th root.
            let k = ((lo << stride_rows_log) + off_row) << stage;
            tile[i0] = bb_add(a, b);
            tile[i1] = bb_mul(bb_sub(a, b), twiddles[k]);
        }
        workgroupBarrier();
    }

    if (in_range) {
        for (var j = j_first; j < t_count; j += lanes) {
            dst[base + j * stride_flat] = tile[(j << params.log_p) + p_local];
        }
    }
}
