// Poseidon2 of width 16 exactly as Plonky3's `Poseidon2BabyBear<16>` / `Poseidon2KoalaBear<16>`:
// initial external linear layer, 4 external rounds, P2_PARTIAL_ROUNDS internal rounds, 4
// external rounds. External layer: the 4x4 MDS block [[2,3,1,1],[1,2,3,1],[1,1,2,3],[3,1,1,2]]
// on each quarter, then each element plus the sum of its residue class mod 4. The field's part
// (the S-box, the number of internal rounds, elements 8..15 of the internal layer 1 + diag(V))
// comes from the virtual import `poseidon2/field`: poseidon2/babybear.wgsl or
// poseidon2/koalabear.wgsl.
//
// The state is four vec4 (elements 4k..4k+4 in s[k]) so it stays in registers.
// Round constants (Montgomery words) come from a uniform buffer at group 0, binding 0:
// words 0..64 external initial (round r, element i at 16r + i), 64..128 external final,
// 128.. internal. Kernels that import this file must not use that binding.
// Needs field/prime.wgsl.
// #import poseidon2/field

@group(0) @binding(0) var<uniform> p2_constants: array<vec4<u32>, P2_CONSTANT_VEC4S>;

struct P2State {
    s0: vec4<u32>,
    s1: vec4<u32>,
    s2: vec4<u32>,
    s3: vec4<u32>,
}

fn add4(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(fp_add(a.x, b.x), fp_add(a.y, b.y), fp_add(a.z, b.z), fp_add(a.w, b.w));
}

fn sbox4(a: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(sbox(a.x), sbox(a.y), sbox(a.z), sbox(a.w));
}

// The 4x4 MDS block (Plonky3's `MDSMat4`).
fn mat4(x: vec4<u32>) -> vec4<u32> {
    let t01 = fp_add(x.x, x.y);
    let t23 = fp_add(x.z, x.w);
    let t0123 = fp_add(t01, t23);
    let t01123 = fp_add(t0123, x.y);
    let t01233 = fp_add(t0123, x.w);
    return vec4<u32>(
        fp_add(t01123, t01),
        fp_add(t01123, fp_double(x.z)),
        fp_add(t01233, t23),
        fp_add(t01233, fp_double(x.x)),
    );
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

// x * 2^-k mod p for 1 <= k <= FP_TWO_ADICITY without a multiply by a Montgomery constant:
// p = FP_ODD * 2^FP_TWO_ADICITY + 1, so q = -x mod 2^k makes x + q*p divisible by 2^k, and
// (x + q*p) / 2^k = (x + q) / 2^k + q * FP_ODD * 2^(FP_TWO_ADICITY - k) < 2p fits in a u32.
// Scaling commutes with Montgomery form.
fn fp_div_2exp(x: u32, k: u32) -> u32 {
    let q = (0u - x) & ((1u << k) - 1u);
    let r = ((x + q) >> k) + q * (FP_ODD << (FP_TWO_ADICITY - k));
    return select(r, r - FP_P, r >= FP_P);
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
