// KoalaBear, p = 2^31 - 2^24 + 1 = 127 * 2^24 + 1: the constants field/prime.wgsl works with
// (`MontyField31<KoalaBearParameters>`), reached through the virtual import `field/constants`.

// p = FP_ODD * 2^FP_TWO_ADICITY + 1 (fp_div_2exp in poseidon2/common.wgsl).
const FP_ODD: u32 = 127u;
const FP_TWO_ADICITY: u32 = 24u;
const FP_P: u32 = 0x7f000001u;
// p^-1 mod 2^32.
const FP_MU: u32 = 0x81000001u;
// 1 and 0 in Montgomery form.
const FP_ONE: u32 = 0x01fffffeu;
const FP_ZERO: u32 = 0u;
// R^2 mod p: Montgomery form of a canonical value v is fp_mul(v, FP_R2) = v * R^2 * R^-1.
const FP_R2: u32 = 402124772u;
// W of the degree-4 binomial extension F[X]/(X^4 - W): 3, in Montgomery form.
const EXT4_W: u32 = 100663290u;
// W of the degree-8 binomial extension F[X]/(X^8 - W): 3, in Montgomery form.
const EXT8_W: u32 = 100663290u;
// The degree-5 extension is the trinomial F[X]/(X^5 + X^2 - 1) (EXT5_W unused).
const EXT5_TRINOMIAL: bool = true;
const EXT5_W: u32 = 0u;
// The degree-5 extension's Frobenius: X^(p k) for k = 1..4, coefficients of X^0..X^3 and X^4
// (Montgomery form; ext5_frobenius).
const EXT5_FROB1: vec4<u32> = vec4<u32>(765015189u, 235704805u, 564529442u, 1275025315u);
const EXT5_FROB1_X4: u32 = 1102401726u;
const EXT5_FROB2: vec4<u32> = vec4<u32>(169616684u, 1188396601u, 806656646u, 992929951u);
const EXT5_FROB2_X4: u32 = 830547243u;
const EXT5_FROB3: vec4<u32> = vec4<u32>(905752085u, 405622337u, 1280056543u, 122670283u);
const EXT5_FROB3_X4: u32 = 1249984505u;
const EXT5_FROB4: vec4<u32> = vec4<u32>(688953779u, 980828988u, 565273709u, 1858491776u);
const EXT5_FROB4_X4: u32 = 932120269u;
