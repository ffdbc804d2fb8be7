//! Hash ids: which hash, field, extension and leaf sponge a proof file names, read from its
//! first bytes before anything is sized or decoded for a field.

use super::*;
use crate::hash::{Keccak, Poseidon2, ProofHash, KECCAK_ID_PREFIX};

/// The Poseidon2 hash ids this build reads, each naming a field and an extension: (id, field
/// name, extension name); each also with width-24 leaves, the id followed by
/// `/leaves-poseidon2-24` (`Params::leaf`). A Keccak proof's id is `p3-keccak/` followed by the
/// extension's name ([`Keccak`](crate::hash::Keccak)).
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

/// The hash id a file over `E` hashed by `H` with leaves hashed by `leaf` names.
pub(super) fn file_hash<F: WhirField, E: WhirExtension<F>, H: ProofHash<F>>(leaf: LeafSponge) -> String {
    H::file_id::<E>(leaf)
}

/// What a hash id names: the hash (`poseidon2`, `keccak`), the field and the extension.
struct Named {
    hash: &'static str,
    field: &'static str,
    extension: &'static str,
}

/// What `id` names, if this build knows it (either leaf sponge for Poseidon2).
fn named(id: &str) -> Option<Named> {
    if let Some(extension) = id.strip_prefix(KECCAK_ID_PREFIX) {
        return KNOWN_HASHES.iter().find(|(_, _, e)| *e == extension).map(|&(_, field, extension)| Named {
            hash: <Keccak as ProofHash<BabyBear>>::NAME,
            field,
            extension,
        });
    }
    let base = id.strip_suffix(LeafSponge::Width24.file_suffix()).unwrap_or(id);
    KNOWN_HASHES.iter().find(|(h, _, _)| *h == base).map(|&(_, field, extension)| Named { hash: <Poseidon2 as ProofHash<BabyBear>>::NAME, field, extension })
}

/// The error for a file whose hash id is not one `H` over `E` reads: another hash's (named,
/// with the flag that reads it), another field's or extension's, or an unknown one.
pub(super) fn hash_mismatch<F: WhirField, E: WhirExtension<F>, H: ProofHash<F>>(hash: &str) -> ProofError {
    match named(hash) {
        Some(n) if n.hash != H::NAME => rejected(format!(
            "it is a proof over {} trees and transcript (hash {hash:?}), not {}; verify it with `--hash {}` (`ProofFileOf<_, _, {}>` in the \
             library; `proof_file_hash` says which hash a file names)",
            title(n.hash),
            title(H::NAME),
            n.hash,
            title(n.hash)
        )),
        Some(n) => rejected(format!(
            "it is a proof over {} (hash {hash:?}), not over {}; read it as a {} proof (`ProofFileOf` over {}; \
             `proof_file_extension` says which extension a file names, and `whir verify` reads that one by itself)",
            n.extension,
            E::NAME,
            n.extension,
            n.extension
        )),
        None => {
            let known: Vec<&str> = KNOWN_HASHES.iter().map(|(h, _, _)| *h).collect();
            rejected(format!(
                "unknown hash {hash:?} (this build knows {}, each also with width-24 leaves: {:?} appended, and {KECCAK_ID_PREFIX:?} followed by \
                 any of their extensions for Keccak)",
                known.join(", "),
                LeafSponge::Width24.file_suffix()
            ))
        }
    }
}

/// A hash's name as a type and in prose (`poseidon2` → `Poseidon2`).
fn title(name: &str) -> String {
    let mut chars = name.chars();
    chars.next().map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
}

/// The field a proof file's header names (through its hash), read from the file's first
/// bytes (the header, the parameters and the hash: a few dozen bytes), without reading or
/// checking the rest ([`proof_file_extension`] says which [`ProofFileOf`] to read it as).
/// [`PREFIX_BYTES`] of a file are enough.
pub fn proof_file_field(prefix: &[u8]) -> Result<&'static str, ProofError> {
    Ok(known_entry(prefix)?.field)
}

/// What a file's first bytes name.
fn known_entry(prefix: &[u8]) -> Result<Named, ProofError> {
    let (_, _, rest) = parse_prefix(prefix)?;
    let hash = parse_hash(rest)?;
    named(&hash).ok_or_else(|| hash_mismatch::<BabyBear, EF, Poseidon2>(&hash))
}

/// The extension (and with it the field) a proof file's header names, as
/// [`proof_file_field`] reads it: `babybear^4`, `koalabear^8`, ... ([`WhirExtension::NAME`]).
pub fn proof_file_extension(prefix: &[u8]) -> Result<&'static str, ProofError> {
    Ok(known_entry(prefix)?.extension)
}

/// The hash a proof file's header names, as [`proof_file_field`] reads it: `poseidon2` or
/// `keccak` ([`ProofHash::NAME`]; read it as a [`ProofFileOf`] over that hash).
pub fn proof_file_hash(prefix: &[u8]) -> Result<&'static str, ProofError> {
    Ok(known_entry(prefix)?.hash)
}

/// The hash a file names, from the bytes after its header (the body starts with the
/// parameters and the hash in both versions).
pub(super) fn parse_hash(rest: &[u8]) -> Result<String, ProofError> {
    let ((_, hash), _): ((Params, String), &[u8]) =
        postcard::take_from_bytes(rest).map_err(|e| rejected(format!("truncated or corrupted: the hash name does not decode ({})", decode_error(&e))))?;
    Ok(hash)
}

/// Checks that a file whose body starts at `rest` names the id of `H` over `E` (with either
/// leaf sponge where `H` has both), before anything is sized, configured or decoded for `F`
/// (another field's values may not even be `F`'s); returns the leaf sponge it names.
pub(super) fn check_hash<F: WhirField, E: WhirExtension<F>, H: ProofHash<F>>(rest: &[u8]) -> Result<LeafSponge, ProofError> {
    let hash = parse_hash(rest)?;
    LeafSponge::ALL
        .into_iter()
        .filter(|&leaf| H::hashes_leaves_with(leaf))
        .find(|&leaf| hash == file_hash::<F, E, H>(leaf))
        .ok_or_else(|| hash_mismatch::<F, E, H>(&hash))
}
