// What a gather (util/gather.wgsl) or a row rehash (merkle/hash_rows.wgsl) reads: `count` items
// of `width` words, item t at idx[idx_offset + t], written from dst_offset on.
// Rust twin: `GatherParams` in crates/gpu/src/merkle/mod.rs.
struct GatherParams {
    count: u32,
    width: u32,
    idx_offset: u32,
    dst_offset: u32,
}
