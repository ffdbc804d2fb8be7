// #import util/dispatch
// #import field/mul
// #import field/babybear
// #import poseidon2/permutation

// Proof-of-work search for Plonky3's DuplexChallenger<BabyBear, Poseidon2, 16, 8>::grind: the
// candidate state is the sponge state with the pending inputs in slots 0..len, the witness in slot
// len, zeros to slot 8 and the absorbed count added to slot 8 (the host prepares all of it but the
// witness). A witness w passes when canonical(permute(state)[7]) & mask == 0.
//
// Persistent threads: workgroup g tries the 64 candidates start + 64 g + lid, then the next 64
// one grid further (T threads in all), in increasing order, and stops once `best` holds a
// smaller passing candidate, so the search ends about one wave after the first hit instead of
// after the whole range. `best` is read once per workgroup and step: it is one word every SM
// reads, and the version that read it per thread and candidate ran at ~1/4.5 of the batch
// permutation rate on the H200 (BENCHMARKS.md).
// Every candidate below the final `best` was tried (a workgroup only stops above some best >=
// the final one), so `best` ends as the smallest passing candidate of the range.

// Rust twin: `GrindParams` in crates/gpu/src/grind.rs.
struct GrindParams {
    base: array<vec4<u32>, 4>,
    // x: witness slot, y: mask, z: first candidate, w: end of the range (exclusive, <= p)
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

var<workgroup> seen_best: u32;

@compute @workgroup_size(64)
fn grind(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let threads = num_wgs.x * num_wgs.y * 64u;
    let slot = params.search.x;
    let end = params.search.w;
    // base + threads stays below 2^32: end <= p < 2^31 and threads <= 2^24.
    var base = params.search.z + linear_workgroup_id(wid, num_wgs) * 64u;
    loop {
        // Everyone has read the previous step's value before it is replaced.
        workgroupBarrier();
        if (lid == 0u) {
            seen_best = atomicLoad(&best);
        }
        let known = workgroupUniformLoad(&seen_best);
        if (base >= end || known < base) {
            break;
        }
        let candidate = base + lid;
        if (candidate < end) {
            let w = bb_mul(candidate, BB_R2);
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
        base += threads;
    }
}
