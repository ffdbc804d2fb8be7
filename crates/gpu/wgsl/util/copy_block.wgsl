// #import util/dispatch

// Copies a block of `rows` x `cols` words between two row-major matrices of different widths:
// dst[(r * dst_width) + dst_col + c] = src[(src_row + r) * src_width + src_col + c]. Splits a
// codeword too large for one binding into column blocks (each transformed alone) and puts
// the transformed blocks back together as row chunks (each hashed alone).
// Rust twin of the params: `BlockParams` in crates/gpu/src/codeword.rs.

struct BlockParams {
    rows: u32,
    cols: u32,
    src_width: u32,
    src_row: u32,
    src_col: u32,
    dst_width: u32,
    dst_col: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: BlockParams;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(256)
fn copy_block(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) num_wgs: vec3<u32>,
) {
    let i = linear_workgroup_id(wid, num_wgs) * 256u + lid;
    if (i >= params.rows * params.cols) {
        return;
    }
    let r = i / params.cols;
    let c = i % params.cols;
    dst[r * params.dst_width + params.dst_col + c] = src[(params.src_row + r) * params.src_width + params.src_col + c];
}
