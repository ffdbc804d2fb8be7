// BabyBear's part of Poseidon2-24 (poseidon2/permutation24.wgsl, through the virtual import
// `poseidon2/field24`): 21 internal rounds, and elements 8..23 of the internal layer's
// 1 + diag(V), V = [-2, 1, 2, 1/2, 3, 4, -1/2, -3, -4, 1/2^8, 1/4, 1/8, 1/16, 1/2^7, 1/2^9,
// 1/2^27, -1/2^8, -1/4, -1/8, -1/16, -1/32, -1/64, -1/2^7, -1/2^27]
// (`BabyBearInternalLayerParameters`).

const P2_24_PARTIAL_ROUNDS: u32 = 21u;
// The constants uniform: 96 + 96 + 21 words, in whole vec4s.
const P2_24_CONSTANT_VEC4S: u32 = 54u;

// Elements 8..23: V = [-4, 1/2^8, 1/2^2, 1/2^3, 1/2^4, 1/2^7, 1/2^9, 1/2^27, -1/2^8, -1/2^2,
// -1/2^3, -1/2^4, -1/2^5, -1/2^6, -1/2^7, -1/2^27].
fn internal_upper24(st: ptr<function, P2State24>, full: u32) {
    let s2 = vec4<u32>(
        fp_sub(full, fp_double(fp_double((*st).s2.x))),
        fp_add(full, fp_div_2exp((*st).s2.y, 8u)),
        fp_add(full, fp_div_2exp((*st).s2.z, 2u)),
        fp_add(full, fp_div_2exp((*st).s2.w, 3u)),
    );
    let s3 = vec4<u32>(
        fp_add(full, fp_div_2exp((*st).s3.x, 4u)),
        fp_add(full, fp_div_2exp((*st).s3.y, 7u)),
        fp_add(full, fp_div_2exp((*st).s3.z, 9u)),
        fp_add(full, fp_div_2exp((*st).s3.w, 27u)),
    );
    let s4 = vec4<u32>(
        fp_sub(full, fp_div_2exp((*st).s4.x, 8u)),
        fp_sub(full, fp_div_2exp((*st).s4.y, 2u)),
        fp_sub(full, fp_div_2exp((*st).s4.z, 3u)),
        fp_sub(full, fp_div_2exp((*st).s4.w, 4u)),
    );
    let s5 = vec4<u32>(
        fp_sub(full, fp_div_2exp((*st).s5.x, 5u)),
        fp_sub(full, fp_div_2exp((*st).s5.y, 6u)),
        fp_sub(full, fp_div_2exp((*st).s5.z, 7u)),
        fp_sub(full, fp_div_2exp((*st).s5.w, 27u)),
    );
    (*st).s2 = s2;
    (*st).s3 = s3;
    (*st).s4 = s4;
    (*st).s5 = s5;
}
