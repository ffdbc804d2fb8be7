// #import util/dispatch
// #import field/mul

// A keyed checksum of a row-major matrix, one value per group of rows (NH, the universal hash
// of UMAC, twice with the key shifted by two words: two 64-bit sums). The host computes the
// same sums (crates/gpu/src/row_checksum.rs defines them for both); a result read
// back and hashed here, then handed to the host's MMCS, is taken as unchanged if every group
// sums the same there.
//
// One workgroup per group. Word pair j of a row (words 2j and 2j + 1, the second 0 past an odd
// row's end) at local row r of the group is keyed at r * width_even + 2j. The buffer may hold
// only a block of the matrix's columns (`first_col`, `cols`, `stride` words a row); every block
// starts at an even column and every block but the last is an even number of columns wide, so
// the pairs are the whole row's, and `accumulate` adds the block's sums to what earlier blocks
// left (64-bit sums mod 2^64 add up in any order).

// Rust twin: `ChecksumParams` in crates/gpu/src/row_checksum.rs.
struct ChecksumParams {
    rows: u32,
    stride: u32,
    first_col: u32,
    cols: u32,
    width_even: u32,
    group_rows: u32,
    accumulate: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: ChecksumParams;
@group(0) @binding(1) var<storage, read> matrix: array<u32>;
@group(0) @binding(2) var<storage, read> key: array<u32>;
// Per group: (first sum lo, hi, second sum lo, hi).
@group(0) @binding(3) var<storage, read_write> sums: array<vec4<u32>>;

var<workgroup> partial: array<vec4<u32>, 64>;

fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn mul64(a: u32, b: u32) -> vec2<u32> {
    return vec2<u32>(a * b, mulhi(a, b));
}

@compute @workgroup_size(64)
fn row_checksum(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let group = linear_workgroup_id(wid, num_wgs);
    let first_row = group * params.group_rows;
    if (first_row >= params.rows) {
        return;
    }
    let rows_here = min(params.group_rows, params.rows - first_row);
    let half = (params.cols + 1u) / 2u;
    let pairs = rows_here * half;
    var s1 = vec2<u32>(0u);
    var s2 = vec2<u32>(0u);
    for (var p = lid; p < pairs; p += 64u) {
        let r = p / half;
        let c = 2u * (p - r * half);
        let at = (first_row + r) * params.stride + c;
        let x0 = matrix[at];
        var x1 = 0u;
        if (c + 1u < params.cols) {
            x1 = matrix[at + 1u];
        }
        let k = r * params.width_even + params.first_col + c;
        s1 = add64(s1, mul64(x0 + key[k], x1 + key[k + 1u]));
        s2 = add64(s2, mul64(x0 + key[k + 2u], x1 + key[k + 3u]));
    }
    partial[lid] = vec4<u32>(s1, s2);
    workgroupBarrier();
    for (var step = 32u; step > 0u; step >>= 1u) {
        if (lid < step) {
            let a = partial[lid];
            let b = partial[lid + step];
            partial[lid] = vec4<u32>(add64(a.xy, b.xy), add64(a.zw, b.zw));
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        var total = partial[0];
        if (params.accumulate != 0u) {
            let before = sums[group];
            total = vec4<u32>(add64(before.xy, total.xy), add64(before.zw, total.zw));
        }
        sums[group] = total;
    }
}
