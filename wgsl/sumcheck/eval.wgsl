// #import sumcheck/reduce

// Evaluations of a table f over {0,1}^m against a weight that factors over 8-bit chunks of the
// index: sum_x f[x] * prod_c T_c[(x >> 8c) & 255]. The multilinear value f(p) = sum_x f[x] eq(p, x)
// has T_c = the equality table of p's coordinates for those bits (built on the host). One pass
// over f, no scratch tables: each workgroup strides over the entries and writes its partial
// sum (paired with zero, for `sum_partials`).
// Rust twin of the params: `EvalParams` in crates/gpu/src/sumcheck.rs.

struct EvalParams {
    // Entries of f in this dispatch (a segment of the table).
    size: u32,
    // Workgroups launched: the grid stride.
    groups: u32,
    // Chunk tables in `tables` (256 entries each), at least one.
    chunks: u32,
    // 1: f holds one BabyBear word per entry; 0: four (BabyBear^4).
    base: u32,
    // Index of the segment's first entry in the whole table.
    offset: u32,
    // Partial pairs before this dispatch's.
    first: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: EvalParams;
@group(0) @binding(1) var<storage, read> f: array<u32>;
@group(0) @binding(2) var<storage, read> tables: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> partials: array<vec4<u32>>;

fn chunk_weight(x: u32) -> vec4<u32> {
    var acc = tables[x & 255u];
    for (var c = 1u; c < params.chunks; c++) {
        acc = ext4_mul(acc, tables[c * 256u + ((x >> (8u * c)) & 255u)]);
    }
    return acc;
}

@compute @workgroup_size(256)
fn eval_partials(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let g = linear_workgroup_id(wid, num_wgs);
    var acc = vec4<u32>(0u);
    for (var x = g * 256u + lid; x < params.size; x += params.groups * 256u) {
        let wx = chunk_weight(params.offset + x);
        if (params.base == 1u) {
            acc = ext4_add(acc, ext4_scale(wx, f[x]));
        } else {
            let fx = vec4<u32>(f[4u * x], f[4u * x + 1u], f[4u * x + 2u], f[4u * x + 3u]);
            acc = ext4_add(acc, ext4_mul(fx, wx));
        }
    }
    let total = workgroup_sum_pair(lid, acc, vec4<u32>(0u));
    if (lid == 0u) {
        partials[2u * (params.first + g)] = total[0];
        partials[2u * (params.first + g) + 1u] = total[1];
    }
}
