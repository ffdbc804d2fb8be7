// #import keccak/f

// Plonky3's Keccak Merkle leaf hash, SerializingHasher<PaddingFreeSponge<KeccakF, 25, 17, 4>>, of
// `width` words of the importer's `matrix` (a storage array of u32) from `start`: the row read as
// u64s, two words a lane, low first (a lone last word alone in its lane); zero state; each
// block of 17 lanes overwrites lanes 0..17 (a short last block only its own); KeccakF after each
// block; the digest the first 4 lanes (`s0`, `s1`). The interface of merkle/sponge.wgsl that
// kernels hashing whole rows use (`LeafState`, `leaf_row`); no kernel absorbs Keccak rows a
// column block at a time.

const KECCAK_LEAF_RATE: u32 = 17u;

struct LeafState {
    s0: vec4<u32>,
    s1: vec4<u32>,
}

// Lane `lane` of the row from `start` of `width` words.
fn leaf_lane(start: u32, width: u32, lane: u32) -> Lane {
    let k = 2u * lane;
    var hi = 0u;
    if (k + 1u < width) {
        hi = matrix[start + k + 1u];
    }
    return lane_of(matrix[start + k], hi);
}

fn leaf_row(start: u32, width: u32) -> LeafState {
    let lanes = (width + 1u) / 2u;
    var s: array<Lane, 25>;
    // Unrolled so that every index into `s` is a constant (the state stays in registers).
    for (var first = 0u; first < lanes; first += KECCAK_LEAF_RATE) {
        let n = min(KECCAK_LEAF_RATE, lanes - first);
        s[0] = leaf_lane(start, width, first);
        if (n > 1u) { s[1] = leaf_lane(start, width, first + 1u); }
        if (n > 2u) { s[2] = leaf_lane(start, width, first + 2u); }
        if (n > 3u) { s[3] = leaf_lane(start, width, first + 3u); }
        if (n > 4u) { s[4] = leaf_lane(start, width, first + 4u); }
        if (n > 5u) { s[5] = leaf_lane(start, width, first + 5u); }
        if (n > 6u) { s[6] = leaf_lane(start, width, first + 6u); }
        if (n > 7u) { s[7] = leaf_lane(start, width, first + 7u); }
        if (n > 8u) { s[8] = leaf_lane(start, width, first + 8u); }
        if (n > 9u) { s[9] = leaf_lane(start, width, first + 9u); }
        if (n > 10u) { s[10] = leaf_lane(start, width, first + 10u); }
        if (n > 11u) { s[11] = leaf_lane(start, width, first + 11u); }
        if (n > 12u) { s[12] = leaf_lane(start, width, first + 12u); }
        if (n > 13u) { s[13] = leaf_lane(start, width, first + 13u); }
        if (n > 14u) { s[14] = leaf_lane(start, width, first + 14u); }
        if (n > 15u) { s[15] = leaf_lane(start, width, first + 15u); }
        if (n > 16u) { s[16] = leaf_lane(start, width, first + 16u); }
        keccak_f(&s);
    }
    let a = lane_words(s[0]);
    let b = lane_words(s[1]);
    let c = lane_words(s[2]);
    let d = lane_words(s[3]);
    return LeafState(vec4<u32>(a, b), vec4<u32>(c, d));
}
