// BabyBear's part of Poseidon2-16 (poseidon2/permutation.wgsl, through the virtual import
// `poseidon2/field16`): 13 internal rounds, and elements 8..15 of the internal
// layer's 1 + diag(V), V = [-2, 1, 2, 1/2, 3, 4, -1/2, -3, -4, 1/2^8, 1/4, 1/8, 1/2^27, -1/2^8,
// -1/16, -1/2^27] (`BabyBearInternalLayerParameters`).

const P2_PARTIAL_ROUNDS: u32 = 13u;
// The constants uniform: 64 + 64 + 13 words, in whole vec4s.
const P2_CONSTANT_VEC4S: u32 = 36u;

// V_0..V_15 in Montgomery form, for an internal layer that multiplies (poseidon2/lanes.wgsl).
const P2_DIAG16: array<u32, 16> = array<u32, 16>(1476395013u, 268435454u, 536870908u, 134217727u, 805306362u, 1073741816u, 1879048194u, 1207959559u, 939524105u, 16777216u, 1073741824u, 536870912u, 32u, 1996488705u, 1744830465u, 2013265889u);

// Elements 8..15: V = [-4, 1/2^8, 1/4, 1/8 | 1/2^27, -1/2^8, -1/16, -1/2^27].
fn internal_upper(st: ptr<function, P2State>, c: vec4<u32>, d: vec4<u32>, full: u32) {
    (*st).s2 = vec4<u32>(
        fp_sub(full, fp_double(fp_double(c.x))),
        fp_add(full, fp_div_2exp(c.y, 8u)),
        fp_add(full, fp_div_2exp(c.z, 2u)),
        fp_add(full, fp_div_2exp(c.w, 3u)),
    );
    (*st).s3 = vec4<u32>(
        fp_add(full, fp_div_2exp(d.x, 27u)),
        fp_sub(full, fp_div_2exp(d.y, 8u)),
        fp_sub(full, fp_div_2exp(d.z, 4u)),
        fp_sub(full, fp_div_2exp(d.w, 27u)),
    );
}
