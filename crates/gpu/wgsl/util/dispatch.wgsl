// Dispatches larger than 65,535 workgroups are split over x and y; kernels see one linear id.
fn linear_workgroup_id(wid: vec3<u32>, num_wgs: vec3<u32>) -> u32 {
    return wid.x + wid.y * num_wgs.x;
}

// Bit reversal of the low `bits` bits of x (0 when bits is 0).
fn reverse_low_bits(x: u32, bits: u32) -> u32 {
    if (bits == 0u) {
        return 0u;
    }
    return reverseBits(x) >> (32u - bits);
}
