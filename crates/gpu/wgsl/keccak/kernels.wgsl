// #import util/dispatch
// #import keccak/f

// Keccak over 64-bit lanes, one thread a state (Plonky3's Keccak trees are the resident tree
// builder's: crates/gpu/wgsl/merkle/keccak_leaf.wgsl, crates/gpu/wgsl/merkle/node_keccak.wgsl):
// - `keccak_permute`: KeccakF on each 25-lane state (50 words, lanes low word first);
// - `keccak256_bytes`: Keccak-256 (Plonky3's `Keccak256Hash`: rate 136 bytes, XOR absorption,
//   padding 0x01 .. 0x80) of equal-length byte messages, each packed little-endian into
//   ceil(len / 4) words; the digest's 32 bytes as 8 words.
// Caller: crates/gpu/src/keccak/mod.rs.

// x: states or messages; y: bytes in a message (`keccak256_bytes`). Rust twin: `[u32; 4]`
// params in crates/gpu/src/keccak/mod.rs.
@group(0) @binding(0) var<uniform> params: vec4<u32>;
@group(0) @binding(1) var<storage, read> words_in: array<u32>;
@group(0) @binding(2) var<storage, read_write> words_out: array<u32>;

// Keccak-256's rate in lanes (136 bytes).
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
