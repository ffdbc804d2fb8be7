// KoalaBear's part of Poseidon2-16 (poseidon2/permutation.wgsl, through the virtual import
// `poseidon2/field16`): 20 internal rounds, and elements 8..15 of the internal
// layer's 1 + diag(V), V = [-2, 1, 2, 1/2, 3, 4, -1/2, -3, -4, 1/2^8, 1/8, 1/2^24, -1/2^8, -1/8,
// -1/16, -1/2^24] (`KoalaBearInternalLayerParameters`).

const P2_PARTIAL_ROUNDS: u32 = 20u;
// The constants uniform: 64 + 64 + 20 words, in whole vec4s.
const P2_CONSTANT_VEC4S: u32 = 37u;

// V_0..V_15 in Montgomery form, for an internal layer that multiplies (poseidon2/lanes.wgsl).
const P2_DIAG16: array<u32, 16> = array<u32, 16>(2063597573u, 33554430u, 67108860u, 16777215u, 100663290u, 134217720u, 2113929218u, 2030043143u, 1996488713u, 16777216u, 536870912u, 256u, 2113929217u, 1593835521u, 1862270977u, 2130706177u);

// Elements 8..15: V = [-4, 1/2^8, 1/8, 1/2^24 | -1/2^8, -1/8, -1/16, -1/2^24].
fn internal_upper(st: ptr<function, P2State>, c: vec4<u32>, d: vec4<u32>, full: u32) {
    (*st).s2 = vec4<u32>(
        fp_sub(full, fp_double(fp_double(c.x))),
        fp_add(full, fp_div_2exp(c.y, 8u)),
        fp_add(full, fp_div_2exp(c.z, 3u)),
        fp_add(full, fp_div_2exp(c.w, 24u)),
    );
    (*st).s3 = vec4<u32>(
        fp_sub(full, fp_div_2exp(d.x, 8u)),
        fp_sub(full, fp_div_2exp(d.y, 3u)),
        fp_sub(full, fp_div_2exp(d.z, 4u)),
        fp_sub(full, fp_div_2exp(d.w, 24u)),
    );
}
