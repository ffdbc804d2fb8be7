// Poseidon2 of width 24 exactly as Plonky3's `Poseidon2BabyBear<24>` / `Poseidon2KoalaBear<24>`:
// initial external linear layer, 4 external rounds, P2_24_PARTIAL_ROUNDS internal rounds, 4
// external rounds. External layer: the 4x4 MDS block on each of the six quarters, then each
// element plus the sum of its residue class mod 4. The field's part comes from virtual imports:
// the S-box from `poseidon2/sbox`, the number of internal rounds and elements 8..23 of the
// internal layer 1 + diag(V) from `poseidon2/field24` (poseidon2/<field>24.wgsl).
//
// The state is six vec4 (elements 4k..4k+4 in s[k]). Round constants (Montgomery words) come
// from a uniform buffer at group 0, binding 10: words 0..96 external initial (round r, element i
// at 24r + i), 96..192 external final, 192.. internal. Kernels that import this file must not
// use that binding. Every name ends in 24, so a kernel may import the width-16 permutation
// (poseidon2/permutation.wgsl, constants at binding 0) beside it: a Merkle tree whose leaves
// hash with width 24 and whose nodes compress with width 16 (merkle/sponge24.wgsl).
// Needs field/prime.wgsl.
// #import poseidon2/sbox
// #import poseidon2/common
// #import poseidon2/field24

@group(0) @binding(10) var<uniform> p2_constants24: array<vec4<u32>, P2_24_CONSTANT_VEC4S>;

struct P2State24 {
    s0: vec4<u32>,
    s1: vec4<u32>,
    s2: vec4<u32>,
    s3: vec4<u32>,
    s4: vec4<u32>,
    s5: vec4<u32>,
}

fn external_linear24(st: ptr<function, P2State24>) {
    let a = mat4((*st).s0);
    let b = mat4((*st).s1);
    let c = mat4((*st).s2);
    let d = mat4((*st).s3);
    let e = mat4((*st).s4);
    let f = mat4((*st).s5);
    let sums = add4(add4(add4(a, b), add4(c, d)), add4(e, f));
    (*st).s0 = add4(a, sums);
    (*st).s1 = add4(b, sums);
    (*st).s2 = add4(c, sums);
    (*st).s3 = add4(d, sums);
    (*st).s4 = add4(e, sums);
    (*st).s5 = add4(f, sums);
}

// One external round with constants starting at vec4 index `rc`.
fn external_round24(st: ptr<function, P2State24>, rc: u32) {
    (*st).s0 = sbox4(add4((*st).s0, p2_constants24[rc]));
    (*st).s1 = sbox4(add4((*st).s1, p2_constants24[rc + 1u]));
    (*st).s2 = sbox4(add4((*st).s2, p2_constants24[rc + 2u]));
    (*st).s3 = sbox4(add4((*st).s3, p2_constants24[rc + 3u]));
    (*st).s4 = sbox4(add4((*st).s4, p2_constants24[rc + 4u]));
    (*st).s5 = sbox4(add4((*st).s5, p2_constants24[rc + 5u]));
    external_linear24(st);
}

// Internal layer: x_i <- sum + V_i x_i, each V_i +-2^j or +-3 (adds, or one fp_div_2exp).
// V_0..V_7 = [-2, 1, 2, 1/2, 3, 4, -1/2, -3] for both fields; V_8..V_23 are the field's
// (`internal_upper24` in poseidon2/<field>24.wgsl).
fn internal_round24(st: ptr<function, P2State24>, rc: u32) {
    let x0 = sbox(fp_add((*st).s0.x, rc));
    let a = (*st).s0;
    let b = (*st).s1;
    let q = add4(add4(add4(b, (*st).s2), add4((*st).s3, (*st).s4)), (*st).s5);
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
    internal_upper24(st, full);
}

fn internal_constant24(i: u32) -> u32 {
    let w = 192u + i;
    return p2_constants24[w >> 2u][w & 3u];
}

fn poseidon2_permute24(st: ptr<function, P2State24>) {
    external_linear24(st);
    for (var r = 0u; r < 4u; r++) {
        external_round24(st, 6u * r);
    }
    for (var r = 0u; r < P2_24_PARTIAL_ROUNDS; r++) {
        internal_round24(st, internal_constant24(r));
    }
    for (var r = 0u; r < 4u; r++) {
        external_round24(st, 24u + 6u * r);
    }
}
