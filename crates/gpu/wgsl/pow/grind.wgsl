// #import util/dispatch
// #import field/mul
// #import field/prime
// #import poseidon2/permutation
// #import pow/params

// Proof-of-work search for Plonky3's DuplexChallenger<F, Poseidon2, 16, 8>::grind: the
// candidate state is the sponge state with the pending inputs in slots 0..len, the witness in slot
// len, zeros to slot 8 and the absorbed count added to slot 8 (the host prepares all of it but the
// witness). A witness w passes when canonical(permute(state)[7]) & mask == 0.
//
// One thread per candidate over a range of about four expected hits, workgroup g holding
// start + 128 g .. start + 128 g + 127 (GRIND_GROUP). A workgroup first reads `best` and returns at once if a
// smaller passing candidate is already known, so a dispatch costs about the work up to the
// first hit plus one wave, and the rest of the range only the early returns. Any candidate below
// the final `best` sits in a workgroup whose first candidate is below it too, so it was tried
// whatever order the workgroups ran in: `best` ends as the smallest passing candidate.
// (Persistent threads looping over the range measured slower for full batches,
// docs/benchmarks-history.md; most likely because threads beyond what the GPU holds at once only
// start when others finish, which breaks the increasing search order and multiplies the work.)
// Workgroups of 128: the ones past the hit cost about the same each as workgroups of 64, so half
// as many halve that tail; 256 slowed the permutations themselves (docs/benchmarks-history.md).
//
// Composed with: const GRIND_GROUP: u32, the workgroup size (`GRIND_GROUP` in
// crates/gpu/src/grind.rs, which also sizes the dispatches).

// The params are a storage buffer so that pow/prepare can write them on the GPU.
@group(0) @binding(1) var<storage, read> params: GrindParams;
@group(0) @binding(2) var<storage, read_write> best: atomic<u32>;

var<workgroup> seen_best: u32;

@compute @workgroup_size(GRIND_GROUP)
fn grind(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let end = params.search.w;
    let first = params.search.z + linear_workgroup_id(wid, num_wgs) * GRIND_GROUP;
    if (lid == 0u) {
        seen_best = atomicLoad(&best);
    }
    let known = workgroupUniformLoad(&seen_best);
    if (first >= end || known < first) {
        return;
    }
    let candidate = first + lid;
    if (candidate >= end) {
        return;
    }
    let w = fp_mul(candidate, FP_R2);
    let slot = params.search.x;
    var st = P2State(
        with_witness(params.base[0], 0u, slot, w),
        with_witness(params.base[1], 1u, slot, w),
        with_witness(params.base[2], 2u, slot, w),
        with_witness(params.base[3], 3u, slot, w),
    );
    poseidon2_permute(&st);
    // Montgomery -> canonical: multiply by plain 1.
    let sample = fp_mul(st.s1.w, 1u);
    if ((sample & params.search.y) == 0u) {
        atomicMin(&best, candidate);
    }
}
