// Poseidon2 of width 16 exactly as Plonky3's `Poseidon2BabyBear<16>` / `Poseidon2KoalaBear<16>`:
// initial external linear layer, 4 external rounds, P2_PARTIAL_ROUNDS internal rounds, 4
// external rounds. External layer: the 4x4 MDS block [[2,3,1,1],[1,2,3,1],[1,1,2,3],[3,1,1,2]]
// on each quarter, then each element plus the sum of its residue class mod 4. The field's part
// comes from virtual imports: the S-box from `poseidon2/sbox` (poseidon2/<field>.wgsl), the
// number of internal rounds and elements 8..15 of the internal layer 1 + diag(V) from
// `poseidon2/field16` (poseidon2/<field>16.wgsl).
//
// The state is four vec4 (elements 4k..4k+4 in s[k]) so it stays in registers.
// Round constants (Montgomery words) come from a uniform buffer at group 0, binding 0:
// words 0..64 external initial (round r, element i at 16r + i), 64..128 external final,
// 128.. internal. Kernels that import this file must not use that binding.
// Needs field/prime.wgsl.
// #import poseidon2/sbox
// #import poseidon2/common
// #import poseidon2/field16

@group(0) @binding(0) var<uniform> p2_constants: array<vec4<u32>, P2_CONSTANT_VEC4S>;

struct P2State {
    s0: vec4<u32>,
    s1: vec4<u32>,
    s2: vec4<u32>,
    s3: vec4<u32>,
}

fn external_linear(st: ptr<function, P2State>) {
    let a = mat4((*st).s0);
    let b = mat4((*st).s1);
    let c = mat4((*st).s2);
    let d = mat4((*st).s3);
    let sums = add4(add4(a, b), add4(c, d));
    (*st).s0 = add4(a, sums);
    (*st).s1 = add4(b, sums);
    (*st).s2 = add4(c, sums);
    (*st).s3 = add4(d, sums);
}

// One external round with constants starting at vec4 index `rc`.
fn external_round(st: ptr<function, P2State>, rc: u32) {
    (*st).s0 = sbox4(add4((*st).s0, p2_constants[rc]));
    (*st).s1 = sbox4(add4((*st).s1, p2_constants[rc + 1u]));
    (*st).s2 = sbox4(add4((*st).s2, p2_constants[rc + 2u]));
    (*st).s3 = sbox4(add4((*st).s3, p2_constants[rc + 3u]));
    external_linear(st);
}

// Internal layer: x_i <- sum + V_i x_i. Every V_i is +-2^j or +-3, so each product is a few
// adds or one fp_div_2exp instead of a Montgomery multiply; negative V_i become subtractions.
// V_0..V_7 = [-2, 1, 2, 1/2, 3, 4, -1/2, -3] for both fields; V_8..V_15 are the field's
// (`internal_upper` in poseidon2/<field>.wgsl).
fn internal_round(st: ptr<function, P2State>, rc: u32) {
    let x0 = sbox(fp_add((*st).s0.x, rc));
    let a = (*st).s0;
    let b = (*st).s1;
    let c = (*st).s2;
    let d = (*st).s3;
    let q = add4(add4(b, c), d);
    let part = fp_add(fp_add(fp_add(a.y, a.z), a.w), fp_add(fp_add(q.x, q.y), fp_add(q.z, q.w)));
    let full = fp_add(part, x0);
    let b3 = fp_add(fp_double(b.x), b.x);
    let d3 = fp_add(fp_double(b.w), b.w);
    (*st).s0 = vec4<u32>(fp_sub(part, x0), fp_add(full, a.y), fp_add(full, fp_double(a.z)), fp_add(full, fp_div_2exp(a.w, 1u)));
    (*st).s1 = vec4<u32>(
        fp_add(full, b3),
        fp_add(full, fp_double(fp_double(b.y))),
        fp_sub(full, fp_div_2exp(b.z, 1u)),
        fp_sub(full, d3),
    );
    internal_upper(st, c, d, full);
}

fn internal_constant(i: u32) -> u32 {
    let w = 128u + i;
    return p2_constants[w >> 2u][w & 3u];
}

fn poseidon2_permute(st: ptr<function, P2State>) {
    external_linear(st);
    for (var r = 0u; r < 4u; r++) {
        external_round(st, 4u * r);
    }
    for (var r = 0u; r < P2_PARTIAL_ROUNDS; r++) {
        internal_round(st, internal_constant(r));
    }
    for (var r = 0u; r < 4u; r++) {
        external_round(st, 16u + 4u * r);
    }
}
