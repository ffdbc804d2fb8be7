// #import util/dispatch
// #import field/mul
// #import field/prime
// #import keccak/f

// Proof-of-work search for Plonky3's SerializingChallenger32<F, HashChallenger<u8, Keccak256Hash,
// 32>>::grind: after its squeeze the inner challenger holds the 32-byte digest it chained, and
// candidate c passes when the digest of that prefix || the 4 bytes of c's stored (Montgomery)
// form, sampled from its end (bytes 31, 30, 29, 28 as a little-endian u32), has its low bits
// (`mask`) zero. The 36-byte message is one Keccak-256 block: bytes 36 and 135 carry the padding.
//
// One thread a candidate, workgroup g holding first + GRIND_GROUP g ..; a workgroup returns at
// once when a smaller passing candidate is already known, so `best` ends as the smallest passing
// candidate (as crates/gpu/wgsl/pow/grind.wgsl, which explains why).
//
// Composed with: const GRIND_GROUP: u32, the workgroup size (crates/gpu/src/keccak/mod.rs sizes the
// dispatches with it).

// prefix: the 32 bytes as 8 little-endian words; candidates first..end, passing where the
// sampled word & mask is 0. Rust twin: `KeccakGrindParams` in crates/gpu/src/keccak/mod.rs.
struct KeccakGrindParams {
    prefix: array<vec4<u32>, 2>,
    mask: u32,
    _unused: u32,
    first: u32,
    end: u32,
}

@group(0) @binding(0) var<uniform> params: KeccakGrindParams;
@group(0) @binding(1) var<storage, read_write> best: atomic<u32>;

var<workgroup> seen_best: u32;

@compute @workgroup_size(GRIND_GROUP)
fn keccak_grind(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let end = params.end;
    let first = params.first + linear_workgroup_id(wid, num_wgs) * GRIND_GROUP;
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
    var s: array<Lane, 25>;
    for (var j = 0u; j < 25u; j++) {
        s[j] = lane_zero();
    }
    s[0] = lane_of(params.prefix[0].x, params.prefix[0].y);
    s[1] = lane_of(params.prefix[0].z, params.prefix[0].w);
    s[2] = lane_of(params.prefix[1].x, params.prefix[1].y);
    s[3] = lane_of(params.prefix[1].z, params.prefix[1].w);
    // The candidate's 4 bytes, then Keccak's first padding byte (0x01) at byte 36 ...
    s[4] = lane_of(fp_mul(candidate, FP_R2), 0x01u);
    // ... and its last (0x80) at byte 135, the rate's last.
    s[16] = lane_of(0u, 0x80000000u);
    keccak_f(&s);
    let d = lane_words(s[3]).y;
    let sampled = (d >> 24u) | ((d >> 8u) & 0xff00u) | ((d << 8u) & 0xff0000u) | (d << 24u);
    if ((sampled & params.mask) == 0u) {
        atomicMin(&best, candidate);
    }
}
