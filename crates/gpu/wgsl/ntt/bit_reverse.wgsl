// #import util/dispatch
// #import field/mul
// #import field/prime

// Row bit-reversal of a row-major matrix with 2^log_n rows, out of place, optionally scaling
// every element by one constant (1/n for an inverse transform).
//
// `bit_reverse_tiled`: write row index = a·2^(k+m) + b·2^k + c with a, c of k bits. Rows
// (a, b, c) go to (rev c, rev b, rev a). One workgroup takes the 2^k x 2^k rows sharing b:
// it reads them with c (then the columns) fastest, so reads are runs of 2^k·width words, and
// writes them with rev a fastest, so writes are runs too; the transpose happens in workgroup
// memory (padded by one word per line against bank conflicts). No scattered stores.
// `bit_reverse_rows`: one thread per element, for very wide rows (a row is already a run)
// and for tiny heights.
// `..._in_place`: the same permutations within `dst` (`src` is a placeholder). Row group b's rows
// go to group rev b's places and back, so one workgroup swaps the pair through two half-size
// tiles (the smaller of b and rev b does it); the row kernel swaps element pairs.

// Rust twin: `BitReverseParams` in crates/gpu/src/ntt/plan.rs.
struct BitReverseParams {
    log_n: u32,
    width: u32, // a power of two for bit_reverse_tiled
    log_tile: u32,
    use_scale: u32,
    scale: u32,
    num_groups: u32,
    total: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: BitReverseParams;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

const WORKGROUP: u32 = 256u;
const BITREV_TILE: u32 = 4096u;
var<workgroup> tile: array<u32, BITREV_TILE>;

fn scaled(v: u32) -> u32 {
    if (params.use_scale != 0u) {
        return fp_mul(v, params.scale);
    }
    return v;
}

// Word index of tile element e (line a = e >> line_log, then c and column) of row group b.
fn tiled_index(e: u32, b: u32, m: u32, k: u32, log_w: u32, line_log: u32, line_mask: u32, w_mask: u32) -> u32 {
    let a = e >> line_log;
    let rem = e & line_mask;
    let row = (((a << m) + b) << k) + (rem >> log_w);
    return (row << log_w) + (rem & w_mask);
}

// Tile element e of row group b, from the source.
fn load_tiled(e: u32, count: u32, b: u32, m: u32, k: u32, log_w: u32, line_log: u32, line_mask: u32, w_mask: u32) -> u32 {
    if (e >= count) {
        return 0u;
    }
    return src[tiled_index(e, b, m, k, log_w, line_log, line_mask, w_mask)];
}

// Output element e of a group's reversal: it takes tile word `slot` to row
// (c_rev, rev b, a_rev) = ((c_rev << m) + rev b) << k + a_rev, column `col`.
struct Reversed {
    slot: u32,
    c_rev: u32,
    a_rev: u32,
    col: u32,
}

fn reversed(e: u32, k: u32, log_w: u32, line_log: u32, line_mask: u32, w_mask: u32, pitch: u32) -> Reversed {
    let c_rev = e >> line_log;
    let rem = e & line_mask;
    let a_rev = rem >> log_w;
    let col = rem & w_mask;
    let a = reverse_low_bits(a_rev, k);
    let c = reverse_low_bits(c_rev, k);
    return Reversed(a * pitch + (c << log_w) + col, c_rev, a_rev, col);
}

fn out_word(r: Reversed, rb: u32, m: u32, k: u32, log_w: u32) -> u32 {
    return (((((r.c_rev << m) + rb) << k) + r.a_rev) << log_w) + r.col;
}

fn store_tiled(e: u32, count: u32, line_log: u32, line_mask: u32, pitch: u32, v: u32) {
    if (e < count) {
        tile[(e >> line_log) * pitch + (e & line_mask)] = v;
    }
}

@compute @workgroup_size(256)
fn bit_reverse_tiled(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let b = linear_workgroup_id(wid, num_wgs);
    if (b >= params.num_groups) {
        return;
    }
    let k = params.log_tile;
    let m = params.log_n - 2u * k;
    let log_w = countTrailingZeros(params.width);
    let w_mask = params.width - 1u;
    let line_log = k + log_w; // a tile line: fixed a, all c and columns
    let line_mask = (1u << line_log) - 1u;
    let count = 1u << (line_log + k);
    let pitch = (1u << line_log) + 1u;

    // Four loads in flight per thread before their workgroup-memory stores.
    for (var e = lid; e < count; e += 4u * WORKGROUP) {
        let v0 = load_tiled(e, count, b, m, k, log_w, line_log, line_mask, w_mask);
        let v1 = load_tiled(e + WORKGROUP, count, b, m, k, log_w, line_log, line_mask, w_mask);
        let v2 = load_tiled(e + 2u * WORKGROUP, count, b, m, k, log_w, line_log, line_mask, w_mask);
        let v3 = load_tiled(e + 3u * WORKGROUP, count, b, m, k, log_w, line_log, line_mask, w_mask);
        store_tiled(e, count, line_log, line_mask, pitch, v0);
        store_tiled(e + WORKGROUP, count, line_log, line_mask, pitch, v1);
        store_tiled(e + 2u * WORKGROUP, count, line_log, line_mask, pitch, v2);
        store_tiled(e + 3u * WORKGROUP, count, line_log, line_mask, pitch, v3);
    }
    workgroupBarrier();

    let rb = reverse_low_bits(b, m);
    for (var e = lid; e < count; e += WORKGROUP) {
        let r = reversed(e, k, log_w, line_log, line_mask, w_mask, pitch);
        dst[out_word(r, rb, m, k, log_w)] = scaled(tile[r.slot]);
    }
}

@compute @workgroup_size(256)
fn bit_reverse_rows(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let e = linear_workgroup_id(wid, num_wgs) * WORKGROUP + lid;
    if (e >= params.total) {
        return;
    }
    let row = e / params.width;
    let col = e - row * params.width;
    let out_row = reverse_low_bits(row, params.log_n);
    dst[out_row * params.width + col] = scaled(src[e]);
}

@compute @workgroup_size(256)
fn bit_reverse_tiled_in_place(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    // Every entry point binds the same buffers (one bind group layout per pipeline).
    _ = src[0];
    let b = linear_workgroup_id(wid, num_wgs);
    if (b >= params.num_groups) {
        return;
    }
    let k = params.log_tile;
    let m = params.log_n - 2u * k;
    let p = reverse_low_bits(b, m);
    if (p < b) {
        return;
    }
    let log_w = countTrailingZeros(params.width);
    let w_mask = params.width - 1u;
    let line_log = k + log_w;
    let line_mask = (1u << line_log) - 1u;
    let count = 1u << (line_log + k);
    let pitch = (1u << line_log) + 1u;
    let second = BITREV_TILE / 2u;

    for (var e = lid; e < count; e += WORKGROUP) {
        let t = (e >> line_log) * pitch + (e & line_mask);
        tile[t] = dst[tiled_index(e, b, m, k, log_w, line_log, line_mask, w_mask)];
        if (p != b) {
            tile[second + t] = dst[tiled_index(e, p, m, k, log_w, line_log, line_mask, w_mask)];
        }
    }
    workgroupBarrier();

    for (var e = lid; e < count; e += WORKGROUP) {
        let r = reversed(e, k, log_w, line_log, line_mask, w_mask, pitch);
        // Group b's rows land in group p's places, and p's in b's.
        dst[out_word(r, p, m, k, log_w)] = scaled(tile[r.slot]);
        if (p != b) {
            dst[out_word(r, b, m, k, log_w)] = scaled(tile[second + r.slot]);
        }
    }
}

@compute @workgroup_size(256)
fn bit_reverse_rows_in_place(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    _ = src[0];
    let e = linear_workgroup_id(wid, num_wgs) * WORKGROUP + lid;
    if (e >= params.total) {
        return;
    }
    let row = e / params.width;
    let col = e - row * params.width;
    let other = reverse_low_bits(row, params.log_n);
    if (other < row) {
        return;
    }
    let f = other * params.width + col;
    let v = dst[e];
    dst[e] = scaled(dst[f]);
    if (other != row) {
        dst[f] = scaled(v);
    }
}
