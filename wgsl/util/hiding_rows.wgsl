// #import util/dispatch
// #import field/mul
// #import field/prime

// Adds the codeword of a hiding message's randomness rows to the codeword of its message
// alone. A hiding message is [m | r | 0]: 2^log_rows message rows, then `t` randomness rows,
// then zeros. Its codeword over the domain <ω> of N = 2^log_n points is, by linearity, the plain
// codeword of m (whose coefficients past 2^log_rows are zero) plus, in each column b, the values
//     x^(2^log_rows) · R_b(x),   R_b(x) = Σ_{j<t} r[j][b] x^j,   x = ω^i,
// so the randomness rows need no padded transform of the message's size.
// `add_hiding_rows` evaluates R_b a coset at a time: with M = 2^log_m >= t and K = N / M, the
// points ω^(c + K·k) (k < M) are the coset ω^c·<η> of η = ω^K, and R_b over it is the size-M
// transform of (r[j][b]·ω^(c·j))_j, a radix-2 DIF in workgroup memory (M log M / 2 products a
// column, not t·M). Its output comes in bit-reversed order: position p holds k = rev(p), whose row
// is c + K·k in natural order, and rev_K(c)·M + p in bit-reversed order (a coset is then one run
// of rows). `add_hiding_rows_horner`: one invocation a row, t products a column (Horner), for
// codewords smaller than a coset or more randomness rows than a coset holds.
// `codeword` holds `cols` columns of the codeword (all of it, or a column block from
// `col_offset` of rows `rand_width` wide) with its rows in natural order, or bit-reversed
// (`reversed` = 1: row s holds x = ω^rev(s)).
// Rust twin of the params: `HidingRowsParams` in crates/gpu/src/codeword.rs.

struct HidingRowsParams {
    log_n: u32,
    log_rows: u32,
    cols: u32,
    rand_width: u32,
    col_offset: u32,
    t: u32,
    reversed: u32,
    log_m: u32,
    // ω, μ = ω^(2^log_rows) and η = ω^K, in Montgomery form.
    omega: u32,
    mu: u32,
    eta: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: HidingRowsParams;
@group(0) @binding(1) var<storage, read> randomness: array<u32>;
@group(0) @binding(2) var<storage, read_write> codeword: array<u32>;

const WORKGROUP: u32 = 256u;
// The largest coset: M = 1024 (four entries an invocation).
const MAX_M: u32 = 1024u;
const PER_LANE: u32 = 4u;
var<workgroup> values: array<u32, MAX_M>;
var<workgroup> twiddles: array<u32, 512>;

// x^(2^log_rows) at x = ω^i: μ^i, μ of order N / 2^log_rows.
fn shift_at(i: u32) -> u32 {
    let rate_mask = (1u << (params.log_n - params.log_rows)) - 1u;
    return fp_pow(params.mu, i & rate_mask);
}

@compute @workgroup_size(256)
fn add_hiding_rows(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let log_m = params.log_m;
    let m = 1u << log_m;
    let log_k = params.log_n - log_m;
    let c = linear_workgroup_id(wid, num_wgs);
    if (c >= (1u << log_k)) {
        return;
    }
    // η^e for e < M / 2, the DIF's twiddles.
    for (var e = lid; e < m / 2u; e += WORKGROUP) {
        twiddles[e] = fp_pow(params.eta, e);
    }
    // Per entry this invocation owns: ω^(c·j) (the coset's shift of coefficient j), and for the
    // output position p = j its storage row and its x^(2^log_rows).
    let wc = fp_pow(params.omega, c);
    var coset_shift: array<u32, PER_LANE>;
    var out_row: array<u32, PER_LANE>;
    var out_scale: array<u32, PER_LANE>;
    for (var q = 0u; q < PER_LANE; q++) {
        let j = lid + q * WORKGROUP;
        if (j < m) {
            coset_shift[q] = fp_pow(wc, j);
            let k = reverse_low_bits(j, log_m);
            let i = c + (k << log_k);
            out_scale[q] = shift_at(i);
            if (params.reversed != 0u) {
                out_row[q] = (reverse_low_bits(c, log_k) << log_m) + j;
            } else {
                out_row[q] = i;
            }
        }
    }
    for (var col = 0u; col < params.cols; col++) {
        let rcol = params.col_offset + col;
        workgroupBarrier();
        for (var q = 0u; q < PER_LANE; q++) {
            let j = lid + q * WORKGROUP;
            if (j < m) {
                var v = 0u;
                if (j < params.t) {
                    v = fp_mul(randomness[j * params.rand_width + rcol], coset_shift[q]);
                }
                values[j] = v;
            }
        }
        // Radix-2 DIF: blocks of `len`, butterflies (u + v, (u - v)·η^((M/len)·j)).
        for (var len = m; len >= 2u; len = len >> 1u) {
            workgroupBarrier();
            let half = len >> 1u;
            let stride = m / len;
            for (var b = lid; b < m / 2u; b += WORKGROUP) {
                let j = b & (half - 1u);
                let at = (b / half) * len + j;
                let u = values[at];
                let v = values[at + half];
                values[at] = fp_add(u, v);
                values[at + half] = fp_mul(fp_sub(u, v), twiddles[j * stride]);
            }
        }
        workgroupBarrier();
        for (var q = 0u; q < PER_LANE; q++) {
            let p = lid + q * WORKGROUP;
            if (p < m) {
                let at = out_row[q] * params.cols + col;
                codeword[at] = fp_add(codeword[at], fp_mul(out_scale[q], values[p]));
            }
        }
    }
}

@compute @workgroup_size(256)
fn add_hiding_rows_horner(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let s = linear_workgroup_id(wid, num_wgs) * WORKGROUP + lid;
    if (s >= (1u << params.log_n)) {
        return;
    }
    var i = s;
    if (params.reversed != 0u) {
        i = reverse_low_bits(s, params.log_n);
    }
    let x = fp_pow(params.omega, i);
    let shift = shift_at(i);
    let row = s * params.cols;
    for (var c = 0u; c < params.cols; c++) {
        let col = params.col_offset + c;
        var acc = 0u;
        for (var j = params.t; j > 0u; j--) {
            acc = fp_add(fp_mul(acc, x), randomness[(j - 1u) * params.rand_width + col]);
        }
        codeword[row + c] = fp_add(codeword[row + c], fp_mul(shift, acc));
    }
}
