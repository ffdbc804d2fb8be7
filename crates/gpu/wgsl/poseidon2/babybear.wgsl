// BabyBear's Poseidon2 S-box, x^7 (the virtual import `poseidon2/sbox`), for every width.

fn sbox(x: u32) -> u32 {
    let x2 = fp_square(x);
    let x3 = fp_mul(x2, x);
    return fp_mul(fp_square(x3), x);
}
