// #import util/dispatch
// #import keccak/f

// Keccak over 64-bit lanes, one thread a state, as Plonky3's Keccak configuration hashes:
// - `keccak_permute`: KeccakF on each 25-lane state (50 words, lanes low word first);
// - `keccak_leaves`: SerializingHasher<PaddingFreeSponge<KeccakF, 25, 17, 4>> of each row of a
//   row-major matrix of 32-bit words: the row read as u64s, two words a lane (a lone last word
//   alone in its lane), absorbed 17 lanes at a time by overwriting, KeccakF after each block,
//   the digest the first 4 lanes (8 words);
// - `keccak_compress`: CompressionFunctionFromHasher<that sponge, 2, 4>: node i hashes its
//   children 2i and 2i + 1 (8 lanes, one block);
// - `keccak_compress_inject`: a level where shorter matrices join (Plonky3's MerkleTree over
//   several heights): node i compresses its children, then that digest with the leaf digest of
//   the joining rows' row i (a zero digest past their height).
// - `keccak256_bytes`: Keccak-256 (Plonky3's `Keccak256Hash`: rate 136 bytes, XOR absorption,
//   padding 0x01 .. 0x80) of equal-length byte messages, each packed little-endian into
//   ceil(len / 4) words; the digest's 32 bytes as 8 words.
// Callers: crates/gpu/src/keccak/mod.rs (permutations, leaves) and crates/gpu/src/keccak/tree.rs (trees).

// x: states, rows, nodes or messages; y: words in a row (`keccak_leaves`), rows joining
// (`keccak_compress_inject`) or bytes in a message (`keccak256_bytes`). Rust twin: `[u32; 4]` params in
// crates/gpu/src/keccak/mod.rs and crates/gpu/src/keccak/tree.rs.
@group(0) @binding(0) var<uniform> params: vec4<u32>;
@group(0) @binding(1) var<storage, read> words_in: array<u32>;
@group(0) @binding(2) var<storage, read_write> words_out: array<u32>;

// The leaf digests of the rows joining at a `keccak_compress_inject` level.
@group(0) @binding(3) var<storage, read> injected: array<u32>;

const KECCAK_SPONGE_RATE: u32 = 17u;

fn thread_index(lid: u32, wid: vec3<u32>, num_wgs: vec3<u32>) -> u32 {
    return linear_workgroup_id(wid, num_wgs) * 64u + lid;
}

@compute @workgroup_size(64)
fn keccak_permute(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let i = thread_index(lid, wid, num_wgs);
    if (i >= params.x) {
        return;
    }
    var s: array<Lane, 25>;
    for (var j = 0u; j < 25u; j++) {
        s[j] = lane_of(words_in[50u * i + 2u * j], words_in[50u * i + 2u * j + 1u]);
    }
    keccak_f(&s);
    for (var j = 0u; j < 25u; j++) {
        let w = lane_words(s[j]);
        words_out[50u * i + 2u * j] = w.x;
        words_out[50u * i + 2u * j + 1u] = w.y;
    }
}

// Lane `lane` of the row whose words are words_in[start..end): words 2 lane and 2 lane + 1, the
// second 0 past the row's end.
fn row_lane(start: u32, end: u32, lane: u32) -> Lane {
    let at = start + 2u * lane;
    var hi = 0u;
    if (at + 1u < end) {
        hi = words_in[at + 1u];
    }
    return lane_of(words_in[at], hi);
}

@compute @workgroup_size(64)
fn keccak_leaves(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let row = thread_index(lid, wid, num_wgs);
    if (row >= params.x) {
        return;
    }
    let width = params.y;
    let start = row * width;
    let end = start + width;
    let lanes = (width + 1u) / 2u;
    var s: array<Lane, 25>;
    for (var j = 0u; j < 25u; j++) {
        s[j] = lane_zero();
    }
    // Unrolled so that every index into `s` is a constant (the state stays in registers).
    for (var first = 0u; first < lanes; first += KECCAK_SPONGE_RATE) {
        let n = min(KECCAK_SPONGE_RATE, lanes - first);
        s[0] = row_lane(start, end, first);
        if (n > 1u) { s[1] = row_lane(start, end, first + 1u); }
        if (n > 2u) { s[2] = row_lane(start, end, first + 2u); }
        if (n > 3u) { s[3] = row_lane(start, end, first + 3u); }
        if (n > 4u) { s[4] = row_lane(start, end, first + 4u); }
        if (n > 5u) { s[5] = row_lane(start, end, first + 5u); }
        if (n > 6u) { s[6] = row_lane(start, end, first + 6u); }
        if (n > 7u) { s[7] = row_lane(start, end, first + 7u); }
        if (n > 8u) { s[8] = row_lane(start, end, first + 8u); }
        if (n > 9u) { s[9] = row_lane(start, end, first + 9u); }
        if (n > 10u) { s[10] = row_lane(start, end, first + 10u); }
        if (n > 11u) { s[11] = row_lane(start, end, first + 11u); }
        if (n > 12u) { s[12] = row_lane(start, end, first + 12u); }
        if (n > 13u) { s[13] = row_lane(start, end, first + 13u); }
        if (n > 14u) { s[14] = row_lane(start, end, first + 14u); }
        if (n > 15u) { s[15] = row_lane(start, end, first + 15u); }
        if (n > 16u) { s[16] = row_lane(start, end, first + 16u); }
        keccak_f(&s);
    }
    for (var j = 0u; j < 4u; j++) {
        let w = lane_words(s[j]);
        words_out[8u * row + 2u * j] = w.x;
        words_out[8u * row + 2u * j + 1u] = w.y;
    }
}

// The first 4 lanes of KeccakF of a state holding `lanes` (8 of them) and zeros.
fn compress_lanes(lanes: array<Lane, 8>) -> array<Lane, 4> {
    var s: array<Lane, 25>;
    for (var j = 0u; j < 25u; j++) {
        s[j] = lane_zero();
    }
    s[0] = lanes[0];
    s[1] = lanes[1];
    s[2] = lanes[2];
    s[3] = lanes[3];
    s[4] = lanes[4];
    s[5] = lanes[5];
    s[6] = lanes[6];
    s[7] = lanes[7];
    keccak_f(&s);
    return array<Lane, 4>(s[0], s[1], s[2], s[3]);
}

@compute @workgroup_size(64)
fn keccak_compress_inject(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let node = thread_index(lid, wid, num_wgs);
    if (node >= params.x) {
        return;
    }
    var children: array<Lane, 8>;
    for (var j = 0u; j < 8u; j++) {
        children[j] = lane_of(words_in[16u * node + 2u * j], words_in[16u * node + 2u * j + 1u]);
    }
    let folded = compress_lanes(children);
    var pair = array<Lane, 8>(folded[0], folded[1], folded[2], folded[3], lane_zero(), lane_zero(), lane_zero(), lane_zero());
    if (node < params.y) {
        for (var j = 0u; j < 4u; j++) {
            pair[4u + j] = lane_of(injected[8u * node + 2u * j], injected[8u * node + 2u * j + 1u]);
        }
    }
    let out = compress_lanes(pair);
    for (var j = 0u; j < 4u; j++) {
        let w = lane_words(out[j]);
        words_out[8u * node + 2u * j] = w.x;
        words_out[8u * node + 2u * j + 1u] = w.y;
    }
}

@compute @workgroup_size(64)
fn keccak_compress(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let node = thread_index(lid, wid, num_wgs);
    if (node >= params.x) {
        return;
    }
    var s: array<Lane, 25>;
    for (var j = 0u; j < 25u; j++) {
        s[j] = lane_zero();
    }
    for (var j = 0u; j < 8u; j++) {
        s[j] = lane_of(words_in[16u * node + 2u * j], words_in[16u * node + 2u * j + 1u]);
    }
    keccak_f(&s);
    for (var j = 0u; j < 4u; j++) {
        let w = lane_words(s[j]);
        words_out[8u * node + 2u * j] = w.x;
        words_out[8u * node + 2u * j + 1u] = w.y;
    }
}

// Word k of a message of `len` bytes starting at words_in[start], padded as Keccak-256 pads it to
// `padded` bytes (0x01 after the message, 0x80 on the last byte).
fn padded_word(start: u32, len: u32, padded: u32, k: u32) -> u32 {
    let first = 4u * k;
    if (first + 4u <= len) {
        return words_in[start + k];
    }
    var w = 0u;
    for (var i = 0u; i < 4u; i++) {
        let at = first + i;
        var byte = 0u;
        if (at < len) {
            byte = (words_in[start + k] >> (8u * i)) & 0xffu;
        }
        if (at == len) {
            byte |= 0x01u;
        }
        if (at == padded - 1u) {
            byte |= 0x80u;
        }
        w |= byte << (8u * i);
    }
    return w;
}

fn padded_lane(start: u32, len: u32, padded: u32, lane: u32) -> Lane {
    return lane_of(padded_word(start, len, padded, 2u * lane), padded_word(start, len, padded, 2u * lane + 1u));
}

@compute @workgroup_size(64)
fn keccak256_bytes(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let m = thread_index(lid, wid, num_wgs);
    if (m >= params.x) {
        return;
    }
    let len = params.y;
    let start = m * ((len + 3u) / 4u);
    let padded = (len / 136u + 1u) * 136u;
    var s: array<Lane, 25>;
    for (var first = 0u; first < padded / 8u; first += KECCAK_SPONGE_RATE) {
        s[0] = s[0] ^ padded_lane(start, len, padded, first);
        s[1] = s[1] ^ padded_lane(start, len, padded, first + 1u);
        s[2] = s[2] ^ padded_lane(start, len, padded, first + 2u);
        s[3] = s[3] ^ padded_lane(start, len, padded, first + 3u);
        s[4] = s[4] ^ padded_lane(start, len, padded, first + 4u);
        s[5] = s[5] ^ padded_lane(start, len, padded, first + 5u);
        s[6] = s[6] ^ padded_lane(start, len, padded, first + 6u);
        s[7] = s[7] ^ padded_lane(start, len, padded, first + 7u);
        s[8] = s[8] ^ padded_lane(start, len, padded, first + 8u);
        s[9] = s[9] ^ padded_lane(start, len, padded, first + 9u);
        s[10] = s[10] ^ padded_lane(start, len, padded, first + 10u);
        s[11] = s[11] ^ padded_lane(start, len, padded, first + 11u);
        s[12] = s[12] ^ padded_lane(start, len, padded, first + 12u);
        s[13] = s[13] ^ padded_lane(start, len, padded, first + 13u);
        s[14] = s[14] ^ padded_lane(start, len, padded, first + 14u);
        s[15] = s[15] ^ padded_lane(start, len, padded, first + 15u);
        s[16] = s[16] ^ padded_lane(start, len, padded, first + 16u);
        keccak_f(&s);
    }
    for (var j = 0u; j < 4u; j++) {
        let w = lane_words(s[j]);
        words_out[8u * m + 2u * j] = w.x;
        words_out[8u * m + 2u * j + 1u] = w.y;
    }
}
