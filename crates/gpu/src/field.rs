//! Field values as the GPU sees them: the Montgomery `u32` words Plonky3 stores for its 31-bit
//! fields (`MontyField31`: BabyBear, KoalaBear).

use p3_baby_bear::BabyBear;
use p3_field::extension::BinomiallyExtendable;
use p3_field::{PrimeField32, TwoAdicField};
use p3_koala_bear::KoalaBear;
use rayon::prelude::*;

use crate::error::{GpuError, Result};

/// The BabyBear prime.
pub const BABYBEAR_P: u32 = 0x7800_0001;

// `BabyBear` is `MontyField31<BabyBearParameters>`, `#[repr(transparent)]` over its Montgomery
// `u32` (p3-monty-31 documents and relies on this layout itself).
const _: () = assert!(std::mem::size_of::<BabyBear>() == 4 && std::mem::align_of::<BabyBear>() == 4);

/// The prime fields the kernels are composed for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldId {
    /// BabyBear, p = 15 * 2^27 + 1.
    BabyBear,
    /// KoalaBear, p = 2^31 - 2^24 + 1.
    KoalaBear,
}

impl FieldId {
    /// Every field.
    pub const ALL: [FieldId; 2] = [FieldId::BabyBear, FieldId::KoalaBear];

    /// The field's name, as Plonky3 spells it.
    pub fn name(self) -> &'static str {
        match self {
            FieldId::BabyBear => "BabyBear",
            FieldId::KoalaBear => "KoalaBear",
        }
    }

    /// The WGSL file of the field's constants (the virtual import `field/constants`).
    pub(crate) fn constants_source(self) -> &'static str {
        match self {
            FieldId::BabyBear => "field/babybear",
            FieldId::KoalaBear => "field/koalabear",
        }
    }

    /// The WGSL file of the field's Poseidon2 S-box (the virtual import `poseidon2/sbox`).
    pub(crate) fn poseidon2_source(self) -> &'static str {
        match self {
            FieldId::BabyBear => "poseidon2/babybear",
            FieldId::KoalaBear => "poseidon2/koalabear",
        }
    }

    /// The WGSL file of the field's Poseidon2 internal rounds and diagonal at width 16 (the
    /// virtual import `poseidon2/field16`).
    pub(crate) fn poseidon2_16_source(self) -> &'static str {
        match self {
            FieldId::BabyBear => "poseidon2/babybear16",
            FieldId::KoalaBear => "poseidon2/koalabear16",
        }
    }

    /// The same at width 24 (the virtual import `poseidon2/field24`).
    pub(crate) fn poseidon2_24_source(self) -> &'static str {
        match self {
            FieldId::BabyBear => "poseidon2/babybear24",
            FieldId::KoalaBear => "poseidon2/koalabear24",
        }
    }
}

/// The extensions the field-generic kernels are composed over (the virtual import `field/ext`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExtensionId {
    /// Degree-4 binomial (`BinomialExtensionField<F, 4>`): the transcript kernels' only one.
    Degree4,
    /// Degree-8 binomial (`BinomialExtensionField<F, 8>`).
    Degree8,
    /// The field's quintic extension: BabyBear's binomial one (`BinomialExtensionField<BabyBear,
    /// 5>`), KoalaBear's trinomial one (`QuinticTrinomialExtensionField<KoalaBear>`); the field's
    /// constants say which modulus (field/ext5.wgsl).
    Degree5,
}

impl ExtensionId {
    /// Every extension.
    pub const ALL: [ExtensionId; 3] = [ExtensionId::Degree4, ExtensionId::Degree8, ExtensionId::Degree5];

    /// Base-field words per element.
    pub const fn words(self) -> usize {
        match self {
            ExtensionId::Degree4 => 4,
            ExtensionId::Degree8 => 8,
            ExtensionId::Degree5 => 5,
        }
    }

    /// The extension's name in messages: "degree 4", "degree 8" or "degree 5".
    pub fn name(self) -> &'static str {
        match self {
            ExtensionId::Degree4 => "degree 4",
            ExtensionId::Degree8 => "degree 8",
            ExtensionId::Degree5 => "degree 5",
        }
    }

    /// The WGSL file behind the virtual import `field/ext`.
    pub(crate) fn ops_source(self) -> &'static str {
        match self {
            ExtensionId::Degree4 => "field/ext_ops4",
            ExtensionId::Degree8 => "field/ext_ops8",
            ExtensionId::Degree5 => "field/ext_ops5",
        }
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for p3_baby_bear::BabyBear {}
    impl Sealed for p3_koala_bear::KoalaBear {}
    impl<F: super::GpuField> Sealed for super::Ext4<F> {}
    impl<F: super::GpuField + p3_field::extension::BinomiallyExtendable<8>> Sealed for p3_field::extension::BinomialExtensionField<F, 8> {}
    impl Sealed for p3_field::extension::BinomialExtensionField<p3_baby_bear::BabyBear, 5> {}
    impl Sealed for p3_field::extension::QuinticTrinomialExtensionField<p3_koala_bear::KoalaBear> {}
}

/// A field the kernels run over: one of Plonky3's `MontyField31` fields, whose elements are
/// `#[repr(transparent)]` Montgomery `u32` words (checked below), so slices of them are the
/// GPU's buffers as they are. Sealed: the layout is what makes the word casts sound.
pub trait GpuField: PrimeField32 + TwoAdicField + BinomiallyExtendable<4> + sealed::Sealed {
    /// Which field this is.
    const ID: FieldId;
}

impl GpuField for BabyBear {
    const ID: FieldId = FieldId::BabyBear;
}

impl GpuField for KoalaBear {
    const ID: FieldId = FieldId::KoalaBear;
}

const _: () = assert!(std::mem::size_of::<KoalaBear>() == 4 && std::mem::align_of::<KoalaBear>() == 4);

/// A field's degree-4 binomial extension (BabyBear^4 by default) as Plonky3 stores it:
/// `BinomialExtensionField` is `#[repr(transparent)]` over `[F; 4]` (p3-field's own
/// `flatten_to_base` relies on this layout).
pub type Ext4<F = BabyBear> = p3_field::extension::BinomialExtensionField<F, 4>;
const _: () = assert!(std::mem::size_of::<Ext4>() == 16 && std::mem::align_of::<Ext4>() == 4);
const _: () = assert!(std::mem::size_of::<Ext4<KoalaBear>>() == 16 && std::mem::align_of::<Ext4<KoalaBear>>() == 4);

/// A field's degree-8 binomial extension (BabyBear^8 by default), `#[repr(transparent)]` over
/// `[F; 8]` as [`Ext4`] is over four.
pub type Ext8<F = BabyBear> = p3_field::extension::BinomialExtensionField<F, 8>;
const _: () = assert!(std::mem::size_of::<Ext8>() == 32 && std::mem::align_of::<Ext8>() == 4);
const _: () = assert!(std::mem::size_of::<Ext8<KoalaBear>>() == 32 && std::mem::align_of::<Ext8<KoalaBear>>() == 4);

/// BabyBear's binomial quintic extension and KoalaBear's trinomial one, `#[repr(transparent)]`
/// over `[F; 5]` as [`Ext4`] is over four.
pub type Ext5BabyBear = p3_field::extension::BinomialExtensionField<BabyBear, 5>;
/// KoalaBear's trinomial quintic extension (see [`Ext5BabyBear`]).
pub type Ext5KoalaBear = p3_field::extension::QuinticTrinomialExtensionField<KoalaBear>;
const _: () = assert!(std::mem::size_of::<Ext5BabyBear>() == 20 && std::mem::align_of::<Ext5BabyBear>() == 4);
const _: () = assert!(std::mem::size_of::<Ext5KoalaBear>() == 20 && std::mem::align_of::<Ext5KoalaBear>() == 4);

/// An extension of `F` the field-generic kernels run over: Plonky3's binomial extensions of
/// degree 4 and 8 and the field's quintic one, `#[repr(transparent)]` over `[F; D]` (checked
/// above), so slices of them are the GPU's buffers as they are (`D` Montgomery words per
/// element, X^0 first). Sealed: the layout is what makes the word casts sound.
pub trait GpuExtension<F: GpuField>: p3_field::ExtensionField<F> + p3_field::BasedVectorSpace<F> + Copy + Send + Sync + sealed::Sealed + 'static {
    /// Which extension this is.
    const ID: ExtensionId;
    /// Base-field words per element.
    const WORDS: usize = Self::ID.words();
}

impl<F: GpuField> GpuExtension<F> for Ext4<F> {
    const ID: ExtensionId = ExtensionId::Degree4;
}

impl<F: GpuField + p3_field::extension::BinomiallyExtendable<8>> GpuExtension<F> for Ext8<F> {
    const ID: ExtensionId = ExtensionId::Degree8;
}

impl GpuExtension<BabyBear> for Ext5BabyBear {
    const ID: ExtensionId = ExtensionId::Degree5;
}

impl GpuExtension<KoalaBear> for Ext5KoalaBear {
    const ID: ExtensionId = ExtensionId::Degree5;
}

/// The Montgomery words of extension values (`E::WORDS` per element, X^0 first), without
/// copying.
pub fn ext_as_words<F: GpuField, E: GpuExtension<F>>(values: &[E]) -> &[u32] {
    debug_assert_eq!(std::mem::size_of::<E>(), 4 * E::WORDS);
    // SAFETY: every GpuExtension is repr(transparent) over [F; WORDS]
    // (sizes and alignment checked above), F a repr(transparent) u32.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u32>(), values.len() * E::WORDS) }
}

/// Turns Montgomery words back into extension values (`E::WORDS` per element). Fails on a
/// non-canonical word (a kernel bug) or a count that is not a multiple of `E::WORDS`.
pub fn ext_from_words<F: GpuField, E: GpuExtension<F>>(words: Vec<u32>) -> Result<Vec<E>> {
    if !words.len().is_multiple_of(E::WORDS) {
        return Err(GpuError::Device(format!("{} words read back for elements of {} words", words.len(), E::WORDS)));
    }
    Ok(E::reconstitute_from_base(words_to::<F>(words)?))
}

/// The Montgomery words of degree-4 extension values (four per element, X^0 first), without
/// copying.
pub fn ext4_as_words<F: GpuField>(values: &[Ext4<F>]) -> &[u32] {
    ext_as_words::<F, Ext4<F>>(values)
}

/// The Montgomery words of `values`, without copying.
pub fn as_words<F: GpuField>(values: &[F]) -> &[u32] {
    // SAFETY: every GpuField is a MontyField31, repr(transparent) over u32 (size and alignment
    // checked above); every element holds a valid u32.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u32>(), values.len()) }
}

/// Montgomery word of one value.
pub fn to_word<F: GpuField>(value: F) -> u32 {
    as_words(std::slice::from_ref(&value))[0]
}

/// Turns Montgomery words back into BabyBear elements, without copying. Fails if a word is not
/// a canonical Montgomery representative (>= p), which would mean a kernel bug.
pub fn from_words(words: Vec<u32>) -> Result<Vec<BabyBear>> {
    words_to(words)
}

/// Turns Montgomery words back into elements of `F`, without copying. Fails if a word is not a
/// canonical Montgomery representative (>= p), which would mean a kernel bug.
pub fn words_to<F: GpuField>(words: Vec<u32>) -> Result<Vec<F>> {
    let p = F::ORDER_U32;
    // Checked on all cores for large outputs: this pass runs on every readback.
    let bad = if words.len() >= 1 << 18 { words.par_iter().position_any(|&w| w >= p) } else { words.iter().position(|&w| w >= p) };
    if let Some(pos) = bad {
        return Err(GpuError::Device(format!("GPU returned a non-canonical field word {:#x} at offset {pos}", words[pos])));
    }
    let mut words = std::mem::ManuallyDrop::new(words);
    // SAFETY: same layout as u32 and every word is < p, i.e. a valid Montgomery value.
    Ok(unsafe { Vec::from_raw_parts(words.as_mut_ptr().cast::<F>(), words.len(), words.capacity()) })
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
