// Poseidon2 of width 16 with one state spread over 16 invocations: invocation `lane` (0..16)
// holds element `lane`, and the linear layers exchange elements through workgroup memory. The
// same permutation as poseidon2/permutation.wgsl (Plonky3's `Poseidon2BabyBear<16>` /
// `Poseidon2KoalaBear<16>`), for work with few states: one thread's permutation is a chain of
// some 800 dependent multiplies (docs/benchmarks-history.md), 16 lanes' is a few S-boxes deep per
// round. It does more work in all than one thread a state, so batches of many states keep
// poseidon2/permute_batch.wgsl.
//
// Every invocation of the workgroup must call `poseidon2_permute_lanes` together (it holds
// barriers): lanes of states that are not there permute a dummy and drop it. The kernel sets
// `P2L_WORDS`, 16 times its states per workgroup, and passes `base` = 16 x the state's place
// in the workgroup. Round constants: poseidon2/permutation.wgsl's uniform at binding 0.
// The internal layer multiplies by 1 + diag(V) in Montgomery form (`P2_DIAG16`, from the
// field's poseidon2/<field>16.wgsl) rather than the one-thread version's shifts: one multiply
// in every lane at once.
// Needs field/prime.wgsl.
// #import poseidon2/permutation

// Two tiles of P2L_WORDS, at offsets 0 and P2L_WORDS, so that one exchange's reads and the
// next one's writes need no barrier between them.
var<workgroup> p2l_tiles: array<u32, 2u * P2L_WORDS>;

fn p2l_word(w: u32) -> u32 {
    return p2_constants[w >> 2u][w & 3u];
}

// The external linear layer: the 4x4 block on each quarter, then each element plus the sum of
// its residue class mod 4 (`external_linear` in poseidon2/permutation.wgsl).
fn p2l_external_linear(base: u32, lane: u32, x: u32) -> u32 {
    p2l_tiles[base + lane] = x;
    workgroupBarrier();
    let q = base + (lane & 12u);
    let y = mat4(vec4<u32>(p2l_tiles[q], p2l_tiles[q + 1u], p2l_tiles[q + 2u], p2l_tiles[q + 3u]))[lane & 3u];
    let b = P2L_WORDS + base;
    p2l_tiles[b + lane] = y;
    workgroupBarrier();
    let c = b + (lane & 3u);
    return fp_add(y, fp_add(fp_add(p2l_tiles[c], p2l_tiles[c + 4u]), fp_add(p2l_tiles[c + 8u], p2l_tiles[c + 12u])));
}

// Constants at word `first` + lane added, the S-box, the external layer.
fn p2l_external_round(base: u32, lane: u32, x: u32, first: u32) -> u32 {
    return p2l_external_linear(base, lane, sbox(fp_add(x, p2l_word(first + lane))));
}

// One internal round: lane 0's element takes the constant and the S-box, then every element
// becomes sum + V_lane x. Rounds alternate tiles (`tile`: 0 or P2L_WORDS), so a round's
// writes never meet the round before's reads.
fn p2l_internal_round(base: u32, lane: u32, x: u32, rc: u32, tile: u32, diag: u32) -> u32 {
    let v = select(x, sbox(fp_add(x, rc)), lane == 0u);
    let t = tile + base;
    p2l_tiles[t + lane] = v;
    workgroupBarrier();
    let s0 = fp_add(fp_add(p2l_tiles[t], p2l_tiles[t + 1u]), fp_add(p2l_tiles[t + 2u], p2l_tiles[t + 3u]));
    let s1 = fp_add(fp_add(p2l_tiles[t + 4u], p2l_tiles[t + 5u]), fp_add(p2l_tiles[t + 6u], p2l_tiles[t + 7u]));
    let s2 = fp_add(fp_add(p2l_tiles[t + 8u], p2l_tiles[t + 9u]), fp_add(p2l_tiles[t + 10u], p2l_tiles[t + 11u]));
    let s3 = fp_add(fp_add(p2l_tiles[t + 12u], p2l_tiles[t + 13u]), fp_add(p2l_tiles[t + 14u], p2l_tiles[t + 15u]));
    return fp_add(fp_add(fp_add(s0, s1), fp_add(s2, s3)), fp_mul(v, diag));
}

// Element `lane` of the permuted state whose element `lane` is `x`.
fn poseidon2_permute_lanes(base: u32, lane: u32, x: u32) -> u32 {
    var y = p2l_external_linear(base, lane, x);
    for (var r = 0u; r < 4u; r++) {
        y = p2l_external_round(base, lane, y, 16u * r);
    }
    let diag = P2_DIAG16[lane];
    for (var r = 0u; r < P2_PARTIAL_ROUNDS; r++) {
        y = p2l_internal_round(base, lane, y, internal_constant(r), (r & 1u) * P2L_WORDS, diag);
    }
    // The last internal round's reads are done before the external layer writes its tile.
    workgroupBarrier();
    for (var r = 0u; r < 4u; r++) {
        y = p2l_external_round(base, lane, y, 64u + 16u * r);
    }
    return y;
}
