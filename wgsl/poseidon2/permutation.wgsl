// Poseidon2 over BabyBear, width 16, x^7 S-box, 4 + 13 + 4 rounds, exactly as Plonky3's
// `Poseidon2BabyBear<16>`: initial external linear layer, 4 external rounds, 13 internal rounds,
// 4 external rounds. External layer: the 4x4 MDS block [[2,3,1,1],[1,2,3,1],[1,1,2,3],[3,1,1,2]]
// on each quarter, then each element plus the sum of its residue class mod 4. Internal layer:
// 1 + diag(V) with V = [-2, 1, 2, 1/2, 3, 4, -1/2, -3, -4, 1/2^8, 1/4, 1/8, 1/2^27, -1/2^8,
// -1/16, -1/2^27].
//
// The state is four vec4 (elements 4k..4k+4 in s[k]) so it stays in registers.
// Round constants (Montgomery words) come from a uniform buffer at group 0, binding 0:
// words 0..64 external initial (round r, element i at 16r + i), 64..128 external final,
// 128..141 internal. Kernels that import this file must not use that binding.
// Needs field/babybear.wgsl.

@group(0) @binding(0) var<uniform> p2_constants: array<vec4<u32>, 36>;

// V in Montgomery form, by quarter (the first entry of V is applied separately).
const P2_DIAG0 = vec4<u32>(1476395013u, 268435454u, 536870908u, 134217727u);
const P2_DIAG1 = vec4<u32>(805306362u, 1073741816u, 1879048194u, 1207959559u);
const P2_DIAG2 = vec4<u32>(939524105u, 16777216u, 1073741824u, 536870912u);
const P2_DIAG3 = vec4<u32>(32u, 1996488705u, 1744830465u, 2013265889u);

struct P2State {
    s0: vec4<u32>,
    s1: vec4<u32>,
    s2: vec4<u32>,
    s3: vec4<u32>,
}

fn add4(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(bb_add(a.x, b.x), bb_add(a.y, b.y), bb_add(a.z, b.z), bb_add(a.w, b.w));
}

fn mul4(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(bb_mul(a.x, b.x), bb_mul(a.y, b.y), bb_mul(a.z, b.z), bb_mul(a.w, b.w));
}

fn sbox(x: u32) -> u32 {
    let x2 = bb_square(x);
    let x3 = bb_mul(x2, x);
    return bb_mul(bb_square(x3), x);
}

fn sbox4(a: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(sbox(a.x), sbox(a.y), sbox(a.z), sbox(a.w));
}

// The 4x4 MDS block (Plonky3's `MDSMat4`).
fn mat4(x: vec4<u32>) -> vec4<u32> {
    let t01 = bb_add(x.x, x.y);
    let t23 = bb_add(x.z, x.w);
    let t0123 = bb_add(t01, t23);
    let t01123 = bb_add(t0123, x.y);
    let t01233 = bb_add(t0123, x.w);
    return vec4<u32>(
        bb_add(t01123, t01),
        bb_add(t01123, bb_double(x.z)),
        bb_add(t01233, t23),
        bb_add(t01233, bb_double(x.x)),
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

fn internal_round(st: ptr<function, P2State>, rc: u32) {
    let x0 = sbox(bb_add((*st).s0.x, rc));
    let s0 = (*st).s0;
    let q1 = add4((*st).s1, (*st).s2);
    let q = add4(q1, (*st).s3);
    let part = bb_add(bb_add(bb_add(s0.y, s0.z), s0.w), bb_add(bb_add(q.x, q.y), bb_add(q.z, q.w)));
    let full = bb_add(part, x0);
    let fullv = vec4<u32>(full);
    let d0 = add4(fullv, mul4(s0, P2_DIAG0));
    (*st).s0 = vec4<u32>(bb_sub(part, x0), d0.y, d0.z, d0.w);
    (*st).s1 = add4(fullv, mul4((*st).s1, P2_DIAG1));
    (*st).s2 = add4(fullv, mul4((*st).s2, P2_DIAG2));
    (*st).s3 = add4(fullv, mul4((*st).s3, P2_DIAG3));
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
    for (var r = 0u; r < 13u; r++) {
        internal_round(st, internal_constant(r));
    }
    for (var r = 0u; r < 4u; r++) {
        external_round(st, 16u + 4u * r);
    }
}
