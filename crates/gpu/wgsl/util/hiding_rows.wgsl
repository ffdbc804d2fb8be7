// #import util/dispatch
// #import field/mul
// #import field/prime

// Adds the codeword of a hiding message's randomness rows to the codeword of its message
// alone. A hiding message is [m | r | 0]: 2^log_rows message rows, then `t` randomness rows,
// then zeros. Its codeword over the domain <ω> of N = 2^log_n points is, by linearity, the plain
// codeword of m (whose coefficients past 2^log_rows are zero) plus, in each column b, the values
//     x^(2^log_rows) · R_b(x),   R_b(x) = Σ_{j<t} r[j][b] x^j,   x = ω^i,
// so the randomness rows need no padded transform of the message's size.
// `add_hiding_rows` evaluates a coset at a time: with M = 2^log_m >= t and K = N / M, the points
// ω^(c + K·k) (k < M) are the coset ω^c·<η> of η = ω^K, where x^(2^log_rows) = ω^(c·2^log_rows)
// (η^(2^log_rows) = 1 when M <= 2^log_rows), so x^(2^log_rows)·R_b(x) over the coset is the
// size-M transform of (r[j][b]·ω^(c·(2^log_rows + j)))_j: a radix-2 DIF in workgroup memory,
// several columns at once (M log M / 2 products a column, not t·M). Its output comes in
// bit-reversed order: position p holds k = rev(p), whose row is c + K·k in natural order and
// rev_K(c)·M + p in bit-reversed order (a coset is then one run of rows).
// `add_hiding_rows_horner`: one invocation a row, t products a column (Horner), where a coset
// does not fit (M over 1024 or over the message's rows).
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
// The largest coset (M = 1024), and the values a workgroup transforms at once (columns of M).
const MAX_M: u32 = 1024u;
const MAX_VALUES: u32 = 2048u;
var<workgroup> values: array<u32, MAX_VALUES>;
var<workgroup> twiddles: array<u32, 512>;
var<workgroup> shifts: array<u32, MAX_M>;

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
    // η^e for e < M / 2 (the DIF's twiddles), and coefficient j's factor ω^(c·(2^log_rows + j)).
    for (var e = lid; e < m / 2u; e += WORKGROUP) {
        twiddles[e] = fp_pow(params.eta, e);
    }
    let wc = fp_pow(params.omega, c);
    let base = fp_pow(wc, 1u << params.log_rows);
    for (var j = lid; j < m; j += WORKGROUP) {
        shifts[j] = fp_mul(base, fp_pow(wc, j));
    }
    let group = min(params.cols, MAX_VALUES / m);
    let reversed_coset = reverse_low_bits(c, log_k) << log_m;
    for (var first = 0u; first < params.cols; first += group) {
        let g = min(group, params.cols - first);
        workgroupBarrier();
        // Entry e: column first + e % g (fastest, so reads and writes run along rows), index e / g.
        for (var e = lid; e < g * m; e += WORKGROUP) {
            let col = e % g;
            let j = e / g;
            var v = 0u;
            if (j < params.t) {
                v = fp_mul(randomness[j * params.rand_width + params.col_offset + first + col], shifts[j]);
            }
            values[col * m + j] = v;
        }
        // Radix-2 DIF: blocks of `len`, butterflies (u + v, (u - v)·η^((M/len)·j)).
        for (var len = m; len >= 2u; len = len >> 1u) {
            workgroupBarrier();
            let half = len >> 1u;
            let stride = m / len;
            for (var b = lid; b < g * (m >> 1u); b += WORKGROUP) {
                let col = b / (m >> 1u);
                let within = b % (m >> 1u);
                let j = within & (half - 1u);
                let at = col * m + (within / half) * len + j;
                let u = values[at];
                let v = values[at + half];
                values[at] = fp_add(u, v);
                values[at + half] = fp_mul(fp_sub(u, v), twiddles[j * stride]);
            }
        }
        workgroupBarrier();
        for (var e = lid; e < g * m; e += WORKGROUP) {
            let col = e % g;
            let p = e / g;
            var row = c + (reverse_low_bits(p, log_m) << log_k);
            if (params.reversed != 0u) {
                row = reversed_coset + p;
            }
            let at = row * params.cols + first + col;
            codeword[at] = fp_add(codeword[at], values[col * m + p]);
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
