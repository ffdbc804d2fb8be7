//! BabyBear values as the GPU sees them: the Montgomery `u32` words Plonky3 stores.

use p3_baby_bear::BabyBear;
use rayon::prelude::*;

use crate::error::{GpuError, Result};

/// The BabyBear prime.
pub const BABYBEAR_P: u32 = 0x7800_0001;

// `BabyBear` is `MontyField31<BabyBearParameters>`, `#[repr(transparent)]` over its Montgomery
// `u32` (p3-monty-31 documents and relies on this layout itself).
const _: () = assert!(std::mem::size_of::<BabyBear>() == 4 && std::mem::align_of::<BabyBear>() == 4);

/// BabyBear^4 as Plonky3 stores it: `BinomialExtensionField` is `#[repr(transparent)]` over
/// `[BabyBear; 4]` (p3-field's own `flatten_to_base` relies on this layout).
pub type Ext4 = p3_field::extension::BinomialExtensionField<BabyBear, 4>;
const _: () = assert!(std::mem::size_of::<Ext4>() == 16 && std::mem::align_of::<Ext4>() == 4);

/// The Montgomery words of BabyBear^4 values (four per element, X^0 first), without copying.
pub fn ext4_as_words(values: &[Ext4]) -> &[u32] {
    // SAFETY: 16 bytes of four BabyBear words per element, alignment 4 (checked above).
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u32>(), values.len() * 4) }
}

/// The Montgomery words of `values`, without copying.
pub fn as_words(values: &[BabyBear]) -> &[u32] {
    // SAFETY: repr(transparent) over u32 (checked size and alignment above); every BabyBear
    // holds a valid u32.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u32>(), values.len()) }
}

/// Montgomery word of one value.
pub fn to_word(value: BabyBear) -> u32 {
    as_words(std::slice::from_ref(&value))[0]
}

/// Turns Montgomery words back into field elements, without copying. Fails if a word is not a
/// canonical Montgomery representative (>= p), which would mean a kernel bug.
pub fn from_words(words: Vec<u32>) -> Result<Vec<BabyBear>> {
    // Checked on all cores for large outputs: this pass runs on every readback.
    let bad = if words.len() >= 1 << 18 {
        words.par_iter().position_any(|&w| w >= BABYBEAR_P)
    } else {
        words.iter().position(|&w| w >= BABYBEAR_P)
    };
    if let Some(pos) = bad {
        return Err(GpuError::Device(format!(
            "GPU returned a non-canonical field word {:#x} at offset {pos}",
            words[pos]
        )));
    }
    let mut words = std::mem::ManuallyDrop::new(words);
    // SAFETY: same layout as u32 and every word is < p, i.e. a valid Montgomery value.
    Ok(unsafe { Vec::from_raw_parts(words.as_mut_ptr().cast::<BabyBear>(), words.len(), words.capacity()) })
}

/// Field element from a Montgomery word (which must be < p).
pub fn from_word(word: u32) -> Result<BabyBear> {
    Ok(from_words(vec![word])?[0])
}

/// Bytes of a `height` x `width` matrix of words, checked: the kernels index rows with 32-bit
/// integers, and the product must not wrap.
pub fn matrix_bytes(height: usize, width: usize) -> Result<u64> {
    let too_large = || GpuError::InvalidInput(format!("a {height} x {width} matrix is too large for 32-bit row indexing on the GPU"));
    if height > u32::MAX as usize || width > u32::MAX as usize {
        return Err(too_large());
    }
    height.checked_mul(width).and_then(|w| w.checked_mul(4)).map(|b| b as u64).ok_or_else(too_large)
}
