// The parts of the leaf sponges (merkle/sponge.wgsl, merkle/sponge24.wgsl) that do not depend
// on the width: reading a block of a row from the importer's `matrix` (a storage array of u32),
// and a row's digest state from the zero state. Each sponge defines `LeafState`, `leaf_zero` and
// `leaf_absorb`.

fn leaf_word_or(start: u32, width: u32, k: u32, old: u32) -> u32 {
    if (k < width) {
        return matrix[start + k];
    }
    return old;
}

// Words k..k+4 of the row, or `old`'s where the row has ended (a short last block overwrites
// only its own positions).
fn leaf_block(start: u32, width: u32, k: u32, old: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(
        leaf_word_or(start, width, k, old.x),
        leaf_word_or(start, width, k + 1u, old.y),
        leaf_word_or(start, width, k + 2u, old.z),
        leaf_word_or(start, width, k + 3u, old.w),
    );
}

fn leaf_row(start: u32, width: u32) -> LeafState {
    return leaf_absorb(leaf_zero(), start, width);
}
