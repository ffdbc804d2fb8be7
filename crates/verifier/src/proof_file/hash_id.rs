//! Hash ids: which field, extension and leaf sponge a proof file names, read from its first
//! bytes before anything is sized or decoded for a field.

use super::*;

/// The hash ids this build reads, each naming a field and an extension: (id, field name,
/// extension name); each also with width-24 leaves, the id followed by
/// `/leaves-poseidon2-24` (`Params::leaf`).
pub const KNOWN_HASHES: [(&str, &str, &str); 6] = {
    use p3_field::extension::{BinomialExtensionField as B, QuinticTrinomialExtensionField as Q};
    use p3_koala_bear::KoalaBear as K;
    type Bb = BabyBear;
    [
        (<EF<Bb> as WhirExtension<Bb>>::FILE_ID, <Bb as WhirField>::NAME, <EF<Bb> as WhirExtension<Bb>>::NAME),
        (<B<Bb, 5> as WhirExtension<Bb>>::FILE_ID, <Bb as WhirField>::NAME, <B<Bb, 5> as WhirExtension<Bb>>::NAME),
        (<B<Bb, 8> as WhirExtension<Bb>>::FILE_ID, <Bb as WhirField>::NAME, <B<Bb, 8> as WhirExtension<Bb>>::NAME),
        (<EF<K> as WhirExtension<K>>::FILE_ID, <K as WhirField>::NAME, <EF<K> as WhirExtension<K>>::NAME),
        (<Q<K> as WhirExtension<K>>::FILE_ID, <K as WhirField>::NAME, <Q<K> as WhirExtension<K>>::NAME),
        (<B<K, 8> as WhirExtension<K>>::FILE_ID, <K as WhirField>::NAME, <B<K, 8> as WhirExtension<K>>::NAME),
    ]
};

/// The hash id a file over `E` with leaves hashed by `leaf` names: the extension's
/// [`WhirExtension::FILE_ID`], with the leaf sponge's suffix for width-24 leaves.
pub(super) fn file_hash<F: WhirField, E: WhirExtension<F>>(leaf: LeafSponge) -> String {
    format!("{}{}", E::FILE_ID, leaf.file_suffix())
}

/// A hash id split into the field's and extension's id and the leaf sponge its suffix names.
pub(super) fn split_hash(hash: &str) -> (&str, LeafSponge) {
    match hash.strip_suffix(LeafSponge::Width24.file_suffix()) {
        Some(base) => (base, LeafSponge::Width24),
        None => (hash, LeafSponge::Width16),
    }
}

/// The error for a file whose hash is not `E`'s: another field's or extension's, named, or an
/// unknown one.
pub(super) fn hash_mismatch<E: WhirExtension<F>, F: WhirField>(hash: &str) -> ProofError {
    let (base, _) = split_hash(hash);
    match KNOWN_HASHES.iter().find(|(h, _, _)| *h == base) {
        Some((_, _, ext)) => rejected(format!(
            "it is a proof over {ext} (hash {hash:?}), not over {}; read it as a {ext} proof (`ProofFileOf` over {ext}; \
             `proof_file_extension` says which extension a file names, and `whir verify` reads that one by itself)",
            E::NAME
        )),
        None => {
            let known: Vec<&str> = KNOWN_HASHES.iter().map(|(h, _, _)| *h).collect();
            rejected(format!(
                "unknown hash {hash:?} (this build knows {}, each also with width-24 leaves: {:?} appended)",
                known.join(", "),
                LeafSponge::Width24.file_suffix()
            ))
        }
    }
}

/// The field a proof file's header names (through its hash), read from the file's first
/// bytes (the header, the parameters and the hash: a few dozen bytes), without reading or
/// checking the rest ([`proof_file_extension`] says which [`ProofFileOf`] to read it as).
/// [`PREFIX_BYTES`] of a file are enough.
pub fn proof_file_field(prefix: &[u8]) -> Result<&'static str, ProofError> {
    Ok(known_entry(prefix)?.1)
}

/// The [`KNOWN_HASHES`] entry a file's first bytes name.
pub(super) fn known_entry(prefix: &[u8]) -> Result<&'static (&'static str, &'static str, &'static str), ProofError> {
    let (_, _, rest) = parse_prefix(prefix)?;
    let hash = parse_hash(rest)?;
    let (base, _) = split_hash(&hash);
    KNOWN_HASHES.iter().find(|(h, _, _)| *h == base).ok_or_else(|| hash_mismatch::<EF, BabyBear>(&hash))
}

/// The extension (and with it the field) a proof file's header names, as
/// [`proof_file_field`] reads it: `babybear^4`, `koalabear^8`, ... ([`WhirExtension::NAME`]).
pub fn proof_file_extension(prefix: &[u8]) -> Result<&'static str, ProofError> {
    Ok(known_entry(prefix)?.2)
}

/// The hash a file names, from the bytes after its header (the body starts with the
/// parameters and the hash in both versions).
pub(super) fn parse_hash(rest: &[u8]) -> Result<String, ProofError> {
    let ((_, hash), _): ((Params, String), &[u8]) =
        postcard::take_from_bytes(rest).map_err(|e| rejected(format!("truncated or corrupted: the hash name does not decode ({})", decode_error(&e))))?;
    Ok(hash)
}

/// Checks that a file whose body starts at `rest` names `E`'s hash id (with either leaf sponge),
/// before anything is sized, configured or decoded for `F` (another field's values may not even
/// be `F`'s); returns the leaf sponge it names.
pub(super) fn check_hash<F: WhirField, E: WhirExtension<F>>(rest: &[u8]) -> Result<LeafSponge, ProofError> {
    let hash = parse_hash(rest)?;
    LeafSponge::ALL.into_iter().find(|&leaf| hash == file_hash::<F, E>(leaf)).ok_or_else(|| hash_mismatch::<E, F>(&hash))
}
