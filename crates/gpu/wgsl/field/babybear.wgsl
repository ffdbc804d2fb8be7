// BabyBear, p = 2^31 - 2^27 + 1 = 15 * 2^27 + 1: the constants field/prime.wgsl works with
// (`MontyField31<BabyBearParameters>`), reached through the virtual import `field/constants`.

// p = FP_ODD * 2^FP_TWO_ADICITY + 1 (fp_div_2exp in poseidon2/common.wgsl).
const FP_ODD: u32 = 15u;
const FP_TWO_ADICITY: u32 = 27u;
const FP_P: u32 = 0x78000001u;
// p^-1 mod 2^32.
const FP_MU: u32 = 0x88000001u;
// 1 and 0 in Montgomery form.
const FP_ONE: u32 = 0x0ffffffeu;
const FP_ZERO: u32 = 0u;
// R^2 mod p: Montgomery form of a canonical value v is fp_mul(v, FP_R2) = v * R^2 * R^-1.
const FP_R2: u32 = 1172168163u;
// W of the degree-4 binomial extension F[X]/(X^4 - W): 11, in Montgomery form.
const EXT4_W: u32 = 939524073u;
// W of the degree-8 binomial extension F[X]/(X^8 - W): 11, in Montgomery form.
const EXT8_W: u32 = 939524073u;
// The degree-5 extension is binomial, F[X]/(X^5 - W) with W = 2 (in Montgomery form).
const EXT5_TRINOMIAL: bool = false;
const EXT5_W: u32 = 536870908u;
// The degree-5 extension's Frobenius: X^(p k) for k = 1..4, coefficients of X^0..X^3 and X^4
// (Montgomery form; ext5_frobenius).
const EXT5_FROB1: vec4<u32> = vec4<u32>(0u, 1079828539u, 0u, 0u);
const EXT5_FROB1_X4: u32 = 0u;
const EXT5_FROB2: vec4<u32> = vec4<u32>(0u, 0u, 847078768u, 0u);
const EXT5_FROB2_X4: u32 = 0u;
const EXT5_FROB3: vec4<u32> = vec4<u32>(0u, 0u, 0u, 1597816133u);
const EXT5_FROB3_X4: u32 = 0u;
const EXT5_FROB4: vec4<u32> = vec4<u32>(0u, 0u, 0u, 0u);
const EXT5_FROB4_X4: u32 = 233372948u;
