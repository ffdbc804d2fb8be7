// #import field/mul
// #import field/prime
// #import field/ext4
// #import field/ext8
// #import field/ext5

// Test kernel: applies one field operation to arrays of operands, so every WGSL field routine
// can be compared with Plonky3. Base ops read one word per operand, degree-4 extension ops four,
// degree-5 ones five, degree-8 ones eight.

struct FieldOpParams {
    op: u32,
    count: u32,
    exponent: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: FieldOpParams;
@group(0) @binding(1) var<storage, read> lhs: array<u32>;
@group(0) @binding(2) var<storage, read> rhs: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

fn load4(buf_is_lhs: bool, i: u32) -> vec4<u32> {
    if (buf_is_lhs) {
        return vec4<u32>(lhs[4u * i], lhs[4u * i + 1u], lhs[4u * i + 2u], lhs[4u * i + 3u]);
    }
    return vec4<u32>(rhs[4u * i], rhs[4u * i + 1u], rhs[4u * i + 2u], rhs[4u * i + 3u]);
}

fn store4(i: u32, v: vec4<u32>) {
    out[4u * i] = v.x;
    out[4u * i + 1u] = v.y;
    out[4u * i + 2u] = v.z;
    out[4u * i + 3u] = v.w;
}

fn load8(buf_is_lhs: bool, i: u32) -> Ext8 {
    return Ext8(load4(buf_is_lhs, 2u * i), load4(buf_is_lhs, 2u * i + 1u));
}

fn store8(i: u32, v: Ext8) {
    store4(2u * i, v.lo);
    store4(2u * i + 1u, v.hi);
}

fn load5(buf_is_lhs: bool, i: u32) -> Ext5 {
    if (buf_is_lhs) {
        return Ext5(vec4<u32>(lhs[5u * i], lhs[5u * i + 1u], lhs[5u * i + 2u], lhs[5u * i + 3u]), lhs[5u * i + 4u]);
    }
    return Ext5(vec4<u32>(rhs[5u * i], rhs[5u * i + 1u], rhs[5u * i + 2u], rhs[5u * i + 3u]), rhs[5u * i + 4u]);
}

fn store5(i: u32, v: Ext5) {
    out[5u * i] = v.lo.x;
    out[5u * i + 1u] = v.lo.y;
    out[5u * i + 2u] = v.lo.z;
    out[5u * i + 3u] = v.lo.w;
    out[5u * i + 4u] = v.x4;
}

@compute @workgroup_size(64)
fn field_op(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= params.count) {
        return;
    }
    switch params.op {
        case 0u: { out[i] = fp_add(lhs[i], rhs[i]); }
        case 1u: { out[i] = fp_sub(lhs[i], rhs[i]); }
        case 2u: { out[i] = fp_neg(lhs[i]); }
        case 3u: { out[i] = fp_mul(lhs[i], rhs[i]); }
        case 4u: { out[i] = fp_square(lhs[i]); }
        case 5u: { out[i] = fp_pow(lhs[i], params.exponent); }
        case 6u: { out[i] = fp_inverse(lhs[i]); }
        case 7u: { store4(i, ext4_add(load4(true, i), load4(false, i))); }
        case 8u: { store4(i, ext4_sub(load4(true, i), load4(false, i))); }
        case 9u: { store4(i, ext4_neg(load4(true, i))); }
        case 10u: { store4(i, ext4_mul(load4(true, i), load4(false, i))); }
        case 11u: { store4(i, ext4_square(load4(true, i))); }
        case 12u: { store4(i, ext4_inverse(load4(true, i))); }
        case 13u: { store8(i, ext8_add(load8(true, i), load8(false, i))); }
        case 14u: { store8(i, ext8_sub(load8(true, i), load8(false, i))); }
        case 15u: { store8(i, ext8_neg(load8(true, i))); }
        case 16u: { store8(i, ext8_mul(load8(true, i), load8(false, i))); }
        case 17u: { store8(i, ext8_square(load8(true, i))); }
        case 18u: { store8(i, ext8_inverse(load8(true, i))); }
        case 19u: { store5(i, ext5_add(load5(true, i), load5(false, i))); }
        case 20u: { store5(i, ext5_sub(load5(true, i), load5(false, i))); }
        case 21u: { store5(i, ext5_neg(load5(true, i))); }
        case 22u: { store5(i, ext5_mul(load5(true, i), load5(false, i))); }
        case 23u: { store5(i, ext5_square(load5(true, i))); }
        case 24u: { store5(i, ext5_inverse(load5(true, i))); }
        default: { out[i] = 0xffffffffu; }
    }
}
