// #import util/dispatch
// #import field/mul
// #import field/prime

// Adds the codeword of a hiding message's randomness rows to the codeword of its message
// alone. A hiding message is [m | r | 0]: 2^log_rows message rows, then `t` randomness rows,
// then zeros. Its codeword over the domain <ω> of 2^log_n points is, by linearity, the plain
// codeword of m (whose coefficients past 2^log_rows are zero) plus, in each column b, the values
//     x^(2^log_rows) · Σ_j r[j][b] x^j,   x = ω^i,
// so the randomness rows need no transform and the message no padding to twice its rows.
// One invocation a codeword row: x and x^(2^log_rows) = μ^i (μ = ω^(2^log_rows), of order
// 2^(log_n - log_rows)) by square-and-multiply, then a Horner pass over the t rows per column.
// `codeword` holds `cols` columns of the codeword (all of it, or a column block from `col_offset`)
// with its rows in natural order, or bit-reversed (`reversed` = 1: row s holds x = ω^rev(s)).
// Rust twin of the params: `HidingRowsParams` in crates/gpu/src/codeword.rs.

struct HidingRowsParams {
    log_n: u32,
    log_rows: u32,
    cols: u32,
    rand_width: u32,
    col_offset: u32,
    t: u32,
    reversed: u32,
    // ω and μ in Montgomery form.
    omega: u32,
    mu: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: HidingRowsParams;
@group(0) @binding(1) var<storage, read> randomness: array<u32>;
@group(0) @binding(2) var<storage, read_write> codeword: array<u32>;

@compute @workgroup_size(256)
fn add_hiding_rows(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let s = linear_workgroup_id(wid, num_wgs) * 256u + lid;
    if (s >= (1u << params.log_n)) {
        return;
    }
    var i = s;
    if (params.reversed != 0u) {
        i = reverse_low_bits(s, params.log_n);
    }
    let x = fp_pow(params.omega, i);
    let rate_mask = (1u << (params.log_n - params.log_rows)) - 1u;
    let shift = fp_pow(params.mu, i & rate_mask);
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
