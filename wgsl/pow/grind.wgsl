// #import util/dispatch
// #import field/mul
// #import field/babybear
// #import poseidon2/permutation

// Proof-of-work search for Plonky3's DuplexChallenger<BabyBear, Poseidon2, 16, 8>::grind: the
// candidate state is the sponge state with the pending inputs in slots 0..len, the witness in slot
// len, zeros to slot 8 and the absorbed count added to slot 8 (the host prepares all of it but the
// witness). A witness w passes when canonical(permute(state)[7]) & mask == 0. One thread per
// candidate; the smallest passing candidate of the batch wins through atomicMin.

// Rust twin: `GrindParams` in crates/gpu/src/grind.rs.
struct GrindParams {
    base: array<vec4<u32>, 4>,
    // x: witness slot, y: mask, z: first candidate, w: candidates in this batch
    search: vec4<u32>,
}

@group(0) @binding(1) var<uniform> params: GrindParams;
@group(0) @binding(2) var<storage, read_write> best: atomic<u32>;

// R^2 mod p: Montgomery form of a canonical value v is v * R^2 * R^-1.
const BB_R2: u32 = 1172168163u;

fn with_witness(base: vec4<u32>, quarter: u32, slot: u32, w: u32) -> vec4<u32> {
    let lanes = vec4<u32>(0u, 1u, 2u, 3u) + vec4<u32>(4u * quarter);
    return select(base, vec4<u32>(w), lanes == vec4<u32>(slot));
}

@compute @workgroup_size(64)
fn grind(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let i = linear_workgroup_id(wid, num_wgs) * 64u + lid;
    if (i >= params.search.w) {
        return;
    }
    let candidate = params.search.z + i;
    if (candidate >= BB_P) {
        return;
    }
    let w = bb_mul(candidate, BB_R2);
    let slot = params.search.x;
    var st = P2State(
        with_witness(params.base[0], 0u, slot, w),
        with_witness(params.base[1], 1u, slot, w),
        with_witness(params.base[2], 2u, slot, w),
        with_witness(params.base[3], 3u, slot, w),
    );
    poseidon2_permute(&st);
    // Montgomery -> canonical: multiply by plain 1.
    let sample = bb_mul(st.s1.w, 1u);
    if ((sample & params.search.y) == 0u) {
        atomicMin(&best, candidate);
    }
}
