// #import util/dispatch

// Copies a table of 2^(row_bits + col_bits) elements of `words` words each, read as a row-major
// matrix of 2^row_bits rows of 2^col_bits elements, with its row index and its column index
// each bit-reversed:
//   dst[(rev(r) << col_bits) | rev(c)] = src[(r << col_bits) | c].
// The map is its own inverse. A table kept at bit-reversed indices (a polynomial whose variables
// are bound first-to-last held in the last-to-first order the sumcheck kernels bind) becomes, so
// copied, the transposed-fold layout a codeword's message of that polynomial takes; with
// col_bits = 0 it is the plain bit reversal.
// Rust twin of the params: `ReverseBitsParams` in crates/gpu/src/reorder.rs.

struct ReverseBitsParams {
    row_bits: u32,
    col_bits: u32,
    words: u32,
    // Elements: 2^(row_bits + col_bits).
    count: u32,
}

@group(0) @binding(0) var<uniform> params: ReverseBitsParams;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

// The low `bits` bits of x reversed (0 for no bits: a shift by 32 is not defined).
fn reverse_low(x: u32, bits: u32) -> u32 {
    if (bits == 0u) {
        return 0u;
    }
    return reverseBits(x) >> (32u - bits);
}

@compute @workgroup_size(256)
fn reverse_index_bits(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let i = linear_workgroup_id(wid, num_wgs) * 256u + lid;
    if (i >= params.count) {
        return;
    }
    let r = i >> params.col_bits;
    let c = i & ((1u << params.col_bits) - 1u);
    let j = (reverse_low(r, params.row_bits) << params.col_bits) | reverse_low(c, params.col_bits);
    for (var k = 0u; k < params.words; k++) {
        dst[j * params.words + k] = src[i * params.words + k];
    }
}
