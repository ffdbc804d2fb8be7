//! Proof files: a small versioned header (parameters, commitment) and Plonky3's `PcsProof`,
//! serialized with postcard. Verification uses the stock p3-whir verifier and challenger.
//! Version 1 holds one polynomial; version 3 a multi-table witness, whose tables the header
//! names (a [`Workload`]: the verifier rebuilds the opening protocol from them), bound to the
//! proof by the transcript (the prover observes the list before the commitment,
//! [`Workload::observe`]). Version 2 (tables not bound) is no longer read.
//!
//! A proof file is untrusted input. Reading it is bounded twice: by the largest proof the
//! expected parameters allow, and by an absolute [`ReadLimits`] (64 MiB by default) that holds
//! whatever a header claims. Every value of the header is checked before anything is built, the
//! memory a file needs is reserved fallibly before it is decoded (a failure is an error, never
//! an abort), a file is accepted only in its one canonical byte form, and the verifier checks the
//! proof against the parameters *it* expects ([`ProofFile::verify`]); accepting the file's own
//! parameters is an explicit, separate choice ([`ProofFile::verify_file_params`]) with a floor.
//! A multi-table file's list is checked against the [`Workload`] bounds and against the
//! evaluations the file holds before any layout or protocol is built from it: a forged list
//! costs time and memory linear in the file (rejected quickly; the widest list the bounds
//! allow, 16 tables of 4,096 columns, verifies quickly too: docs/status.md).

use std::io::Read;

mod hash_id;
mod hiding;
use hash_id::{check_hash, file_hash};
pub use hash_id::{proof_file_extension, proof_file_field, proof_file_hash, KNOWN_HASHES};
use hiding::refuse_hiding;
pub use hiding::{hiding_points, hiding_points_over, proof_file_is_hiding, zk_config, HidingProofFileOf, ZkMasks, HIDING_VERSION};

use p3_challenger::DuplexChallenger;
use p3_commit::MultilinearPcs;
use p3_dft::Radix2DFTSmallBatch;
use p3_whir::{PcsProof, VerifierError, WhirProver, WhirShape};
use serde::{Deserialize, Serialize};

use crate::error::ProofError;
use crate::hash::{Keccak, LeafSponge, Poseidon2, ProofHash, WhirExtension, WhirField};
use crate::params::{ParamSource, Params, WEAK_SECURITY_BITS};
use crate::{opening_protocol, TableLayout, Workload, EF};
use p3_baby_bear::BabyBear;
use p3_symmetric::MerkleCap;

const MAGIC: [u8; 8] = *b"WHIRWGPU";
/// Bumped on any change of the layout below: the newest version, written for multi-table
/// proofs. Single-polynomial proofs are still written, and read, as version 1.
pub const FORMAT_VERSION: u16 = 3;
/// The version of single-polynomial files (no table list).
const SINGLE_POLYNOMIAL_VERSION: u16 = 1;
/// Multi-table files whose table list the transcript did not bind: a height below the fold
/// could be rewritten (the PCS pads it to the fold either way) and the proof still verified.
/// Refused with a message that says so.
const UNBOUND_TABLES_VERSION: u16 = 2;
/// The hash id of BabyBear^4 proofs (the default); each extension's is
/// [`WhirExtension::FILE_ID`].
pub const HASH_ID: &str = <BabyBear as WhirField>::HASH_ID;

/// Plonky3's challenger, as the stock verifier runs it.
pub type StockChallenger<F = BabyBear> = DuplexChallenger<F, crate::hash::Perm<F>, 16, 8>;
type StockPcs<F, E, H> = WhirProver<E, F, Radix2DFTSmallBatch<F>, <H as ProofHash<F>>::Mmcs, <H as ProofHash<F>>::Challenger, TableLayout<F, E>>;
type Proof<F, E, H> = PcsProof<F, E, <H as ProofHash<F>>::Mmcs>;

/// A BabyBear proof file (the default field).
pub type ProofFile = ProofFileOf<BabyBear>;
/// A proof file over Plonky3's Keccak configuration ([`Keccak`]).
pub type KeccakProofFileOf<F, E = EF<F>> = ProofFileOf<F, E, Keccak>;
/// A hiding proof file over Plonky3's Keccak configuration ([`Keccak`]).
pub type KeccakHidingProofFileOf<F, E = EF<F>> = HidingProofFileOf<F, E, Keccak>;

/// Bytes read before the parameters are known: the header, the params and the hash (which
/// names the field) fit in far fewer.
pub const PREFIX_BYTES: usize = 256;
/// Fixed part of a file: magic, version, params, hash name, commitment, length prefixes.
const FIXED_BYTES: usize = 512;
/// postcard's widest length prefix (a u64 varint).
const LEN: usize = 10;
const F_BYTES: usize = 4;
/// Verification memory: this much, plus a multiple of the largest file (see `max_verify_memory`).
const VERIFY_FIXED_BYTES: usize = 8 << 20;
const VERIFY_BYTES_PER_FILE_BYTE: usize = 8;
/// And per column of a multi-table file's list: the stacked layout's claims and selectors in
/// p3-sumcheck's and p3-whir's verifier (about 0.7-0.9 KiB measured, tests/verify_memory.rs).
const VERIFY_BYTES_PER_COLUMN: usize = 1 << 10;
/// Bytes asked of the reader at a time; the read buffer grows by doubling, never past the bound.
const READ_CHUNK_BYTES: usize = 64 << 10;

/// What a verifier reads and holds for one proof file, whatever the file's header claims.
///
/// The header's parameters give their own, tighter bound ([`ProofFile::max_bytes`]); this one
/// holds where they would allow more: a forged header can name parameters whose largest proof
/// is gigabytes. Honest proofs are far smaller (kilobytes to a few MiB for every parameter set
/// this crate accepts), so the default refuses only files no verifier should hold on trust.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadLimits {
    /// Most bytes read from one proof file; a larger file is refused without reading on.
    /// Reading and verifying then hold at most `8 MiB + 8 x` this many bytes of heap, plus
    /// 1 KiB for each column of a multi-table file's list (at most 64 MiB: 65,536 columns).
    pub max_file_bytes: usize,
}

impl ReadLimits {
    /// 64 MiB: far above any honest proof this crate accepts.
    pub const DEFAULT_MAX_FILE_BYTES: usize = 64 << 20;

    /// A limit of `max_file_bytes`: raise it only for a large proof from a prover you trust.
    pub fn new(max_file_bytes: usize) -> Self {
        Self { max_file_bytes }
    }
}

impl Default for ReadLimits {
    fn default() -> Self {
        Self::new(Self::DEFAULT_MAX_FILE_BYTES)
    }
}

/// `params` as a file hashed by `H` names them: the leaf sponge the default where `H` does not
/// hash leaves with Poseidon2.
fn leaves_of<F: WhirField, H: ProofHash<F>>(params: &Params) -> Params {
    let leaf = if H::hashes_leaves_with(params.leaf) { params.leaf } else { LeafSponge::default() };
    Params { leaf, ..params.clone() }
}

/// `bytes` in MiB for messages, to one decimal.
fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

/// The bytes a file may hold: the parameters' bound, capped by the absolute limit, and the
/// error for a file over it (which of the two bounds it broke, and what to do).
struct FileBound {
    params_bytes: usize,
    limits: ReadLimits,
}

impl FileBound {
    fn bytes(&self) -> usize {
        self.params_bytes.min(self.limits.max_file_bytes)
    }

    fn exceeded(&self, what: &str) -> ProofError {
        if self.params_bytes <= self.limits.max_file_bytes {
            rejected(format!("{what} larger than any proof for its parameters can be ({} bytes at most)", self.params_bytes))
        } else {
            rejected(format!(
                "{what} larger than the {} bytes ({}) a verifier reads from one proof file (its parameters would allow {}); \
                 raise the limit only for a proof you trust (`whir verify --max-proof-mib`, `ReadLimits` in the library)",
                self.limits.max_file_bytes,
                mib(self.limits.max_file_bytes),
                mib(self.params_bytes)
            ))
        }
    }
}

/// Reserves `bytes` of heap and gives it back at once: the memory decoding and verifying a
/// file of a given size may need, asked for fallibly before any of it is used, so a file too
/// large for this process is an error here rather than an abort inside the decoder.
fn ensure_memory(bytes: usize, what: impl FnOnce() -> String) -> Result<(), ProofError> {
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(bytes).map_err(|_| {
        rejected(format!(
            "{} needs up to {bytes} bytes ({}) of memory, which this process cannot allocate; \
             free memory, raise the process's memory limit, or lower the read limit",
            what(),
            mib(bytes)
        ))
    })
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Header {
    magic: [u8; 8],
    version: u16,
}

/// What a verifier accepts when it takes a proof file's own parameters
/// ([`ProofFile::verify_file_params`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileParamsFloor {
    /// The least security level accepted, in bits.
    pub min_security_bits: usize,
    /// Accept a level that rests on a conjecture (the capacity bound), not only proven ones.
    pub allow_conjectured: bool,
}

impl Default for FileParamsFloor {
    /// [`WEAK_SECURITY_BITS`], proven bounds only.
    fn default() -> Self {
        Self { min_security_bits: WEAK_SECURITY_BITS, allow_conjectured: false }
    }
}

impl FileParamsFloor {
    /// An error unless a file's own `params` are valid and clear this floor.
    fn check(&self, params: &Params) -> Result<(), ProofError> {
        params.validate(ParamSource::ProofFile)?;
        if params.security_bits < self.min_security_bits {
            return Err(ProofError::ParamsMismatch(format!(
                "the proof file's header says security = {} bits, below the {} bits accepted",
                params.security_bits, self.min_security_bits
            )));
        }
        if !params.soundness.is_proven() && !self.allow_conjectured {
            return Err(ProofError::ParamsMismatch(format!(
                "the proof file's header claims {} bits resting on {}; accept that explicitly (`--allow-conjecture`, \
                 `FileParamsFloor::allow_conjectured`) or verify with parameters you choose",
                params.security_bits,
                params.soundness.basis()
            )));
        }
        Ok(())
    }
}

/// `bytes` decoded as a `T`, all of them, in the one canonical form (`what` names it in errors).
fn decode_canonical<T: Serialize + serde::de::DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T, ProofError> {
    let (value, tail): (T, &[u8]) =
        postcard::take_from_bytes(bytes).map_err(|e| rejected(format!("{what} is truncated or corrupted: {}", decode_error(&e))))?;
    if !tail.is_empty() {
        return Err(rejected(format!("{} unexpected bytes after {what}", tail.len())));
    }
    if postcard::to_allocvec(&value).map_err(|e| rejected(e.to_string()))? != bytes {
        return Err(rejected(format!("{what} is not in canonical form (it re-encodes to different bytes)")));
    }
    Ok(value)
}

/// A proof over `F` (BabyBear or KoalaBear) with its challenges in `E` (the field's degree-4
/// extension by default) and its trees and transcript hashed by `H` ([`Poseidon2`] by default,
/// or [`Keccak`]; the header's hash id names all three) with what the verifier needs to check
/// it. [`ProofFile`] is BabyBear^4's over Poseidon2.
#[derive(Clone, Debug)]
pub struct ProofFileOf<F: WhirField, E: WhirExtension<F> = EF<F>, H: ProofHash<F> = Poseidon2> {
    /// The parameters the prover says it used. Untrusted: the verifier compares them with its own.
    pub params: Params,
    /// The hash id as read (or made by `new`); `to_bytes` writes the id of `H` and
    /// `params.leaf`, so a file always names the hash and leaf sponge its parameters say.
    pub hash: String,
    /// The committed tables, each opened as [`Workload::protocol`] says (version 3); None for
    /// one polynomial (version 1). Untrusted, as the parameters.
    pub tables: Option<Workload>,
    /// The Merkle root the proof opens.
    pub commitment: MerkleCap<F, H::Digest>,
    /// postcard-serialized `PcsProof<F, E, H::Mmcs>`.
    pub proof: Vec<u8>,
    extension: std::marker::PhantomData<(E, H)>,
}

/// The body after the header, version 1.
#[derive(Serialize, Deserialize)]
struct BodyV1<P, S, C, B> {
    params: P,
    hash: S,
    commitment: C,
    proof: B,
}

/// A v1 body as read.
type DecodedBodyV1<F, D> = BodyV1<Params, String, MerkleCap<F, D>, Vec<u8>>;

/// A tables body as read: the tables as (variables, columns) pairs, checked after decoding.
type DecodedTablesBody<F, D> = TablesBody<Params, String, Vec<(u8, u32)>, MerkleCap<F, D>, Vec<u8>>;

/// The body after the header, version 3 (laid out as version 2's was): the tables as
/// (variables, columns) after the hash.
#[derive(Serialize, Deserialize)]
struct TablesBody<P, S, T, C, B> {
    params: P,
    hash: S,
    tables: T,
    commitment: C,
    proof: B,
}

/// What a file's openings hold, for its size bound.
#[derive(Clone, Copy)]
enum Openings<'a> {
    /// One polynomial at `points` points.
    Single,
    /// One batch per table of these tables.
    Tables(&'a Workload),
    /// One batch per table of tables not known yet.
    AnyTables,
}

fn rejected(what: impl Into<String>) -> ProofError {
    ProofError::ProofFile(what.into())
}

/// The header and parameters at the start of a file, checked: its version, parameters and
/// the bytes after the header.
fn parse_prefix(bytes: &[u8]) -> Result<(u16, Params, &[u8]), ProofError> {
    let (header, rest): (Header, &[u8]) =
        postcard::take_from_bytes(bytes).map_err(|e| rejected(format!("not a whir-wgpu proof file (the header is unreadable: {})", decode_error(&e))))?;
    if header.magic != MAGIC {
        return Err(rejected("not a whir-wgpu proof file (it does not start with the WHIRWGPU magic)"));
    }
    if header.version == UNBOUND_TABLES_VERSION {
        return Err(rejected(format!(
            "format version {UNBOUND_TABLES_VERSION} (a multi-table proof whose table list its transcript does not bind) is no longer read; \
             prove the tables again with this build (format {FORMAT_VERSION})"
        )));
    }
    if header.version != SINGLE_POLYNOMIAL_VERSION && header.version != FORMAT_VERSION && header.version != HIDING_VERSION {
        return Err(rejected(format!(
            "format version {} is not supported (this build reads versions {SINGLE_POLYNOMIAL_VERSION}, {FORMAT_VERSION} and {HIDING_VERSION}, hiding)",
            header.version
        )));
    }
    let (params, _): (Params, &[u8]) = postcard::take_from_bytes(rest).map_err(|e| {
        // The parameters hold numbers and one enum: a value serde rejects is the soundness tag.
        let why = match e {
            postcard::Error::SerdeDeCustom | postcard::Error::DeserializeBadEnum => "the soundness tag is not one of johnson, capacity, unique".to_string(),
            e => decode_error(&e),
        };
        rejected(format!("the parameters in the header are unreadable: {why}"))
    })?;
    params.validate(ParamSource::ProofFile)?;
    Ok((header.version, params, rest))
}

/// The error for a file made with other parameters than `expected`, naming each difference.
fn mismatch(file: &Params, expected: &Params) -> Result<(), ProofError> {
    mismatch_with(file, expected, file.to_flags())
}

/// [`mismatch`], suggesting `flags` as the file's parameters.
fn mismatch_with(file: &Params, expected: &Params, flags: String) -> Result<(), ProofError> {
    let differences = file.differences(expected);
    if differences.is_empty() {
        return Ok(());
    }
    Err(ProofError::ParamsMismatch(format!(
        "the proof was made with other parameters than the verifier expects: {}; verify with the proof's parameters only if you accept them ({})",
        differences.join(", "),
        flags
    )))
}

/// Reads at most `bound.bytes()` bytes into `into`; more is an error that says which bound
/// broke, without reading further. Reads go through a small scratch chunk; the buffer grows by
/// doubling, fallibly (an allocation failure is an error), and never past the bound: one byte
/// more is looked for on the stack.
fn read_bounded(reader: &mut impl Read, bound: &FileBound, into: &mut Vec<u8>) -> Result<(), ProofError> {
    let limit = bound.bytes();
    let mut read_into = |buf: &mut [u8]| loop {
        match reader.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(rejected(format!("reading it failed: {e}"))),
        }
    };
    let mut chunk = vec![0u8; READ_CHUNK_BYTES];
    loop {
        if into.len() > limit {
            return Err(bound.exceeded("it is"));
        }
        if into.len() == limit {
            return match read_into(&mut [0u8])? {
                0 => Ok(()),
                _ => Err(bound.exceeded("it is")),
            };
        }
        let want = chunk.len().min(limit - into.len());
        let read = read_into(&mut chunk[..want])?;
        if read == 0 {
            return Ok(());
        }
        if into.len() + read > into.capacity() {
            // Powers of two, so the last doubling holds at most half the limit beside the new buffer.
            let target = (into.capacity() * 2).max((into.len() + read).next_power_of_two()).min(limit);
            into.try_reserve_exact(target - into.len()).map_err(|_| {
                rejected(format!(
                    "holding {target} bytes ({}) of it failed: this process cannot allocate that much; \
                     free memory, raise the process's memory limit, or lower the read limit",
                    mib(target)
                ))
            })?;
        }
        into.extend_from_slice(&chunk[..read]);
    }
}

/// What a postcard decoding error means for a proof file, in words.
fn decode_error(e: &postcard::Error) -> String {
    use postcard::Error as P;
    match e {
        P::DeserializeUnexpectedEnd => "it ends before the proof does (truncated)".into(),
        P::DeserializeBadVarint => "a length or number is malformed".into(),
        P::DeserializeBadBool | P::DeserializeBadOption | P::DeserializeBadEnum => "a tag byte is invalid".into(),
        P::DeserializeBadUtf8 | P::DeserializeBadChar => "a text field is not valid UTF-8".into(),
        // Plonky3's field decoder rejects values >= p with a message postcard does not keep.
        P::SerdeDeCustom => "a value is out of range (a field element not below p)".into(),
        other => other.to_string(),
    }
}

/// Checks that a multi-table proof holds one opening batch per table with each table's
/// evaluations (every column, the successor views of half of them), in time linear in the list:
/// a forged list fails here, before the verifier builds its protocol.
fn check_openings<F: WhirField, E: WhirExtension<F>, H: ProofHash<F>>(proof: &Proof<F, E, H>, tables: &Workload) -> Result<(), ProofError> {
    if proof.evals.len() != tables.tables.len() {
        return Err(rejected(format!(
            "its proof opens {} batches, but its header names {} tables (one batch a table)",
            proof.evals.len(),
            tables.tables.len()
        )));
    }
    for (i, (batch, &(_, width))) in proof.evals.iter().zip(&tables.tables).enumerate() {
        let (current, next) = (batch.current().len(), batch.next().len());
        if current != width || next != width.div_ceil(2) {
            return Err(rejected(format!(
                "its proof's batch {i} holds {current} + {next} evaluations, but table {i} of the header has {width} columns ({width} + {} expected)",
                width.div_ceil(2)
            )));
        }
    }
    Ok(())
}

/// Verifier failures in words: what failed, and where in the proof.
fn describe(e: &VerifierError) -> String {
    use VerifierError as V;
    match e {
        V::MerkleProofInvalid { position, reason } => {
            format!("a Merkle opening does not match its commitment (query position {position}: {reason})")
        }
        V::SumcheckFailed { round, .. } => format!("the sumcheck does not add up in round {round}"),
        V::InvalidPowWitness { round, bits } => {
            format!("the query proof-of-work witness of round {round} does not clear the {bits} bits required")
        }
        V::Sumcheck(s) => format!("a sumcheck in the proof is malformed or wrong: {s}"),
        V::Config(c) => format!("the verifier's configuration rejects the opening claims: {c}"),
        other => format!("{other}"),
    }
}

impl<F: WhirField, E: WhirExtension<F>, H: ProofHash<F>> ProofFileOf<F, E, H> {
    /// A file for a proof made with `params`: its commitment and its postcard-serialized
    /// `PcsProof`. (A [`Keccak`] proof's leaves are Keccak's: a Poseidon2 leaf width does not
    /// apply, and its file names the default.)
    pub fn new(params: &Params, commitment: MerkleCap<F, H::Digest>, proof: Vec<u8>) -> Self {
        Self {
            params: leaves_of::<F, H>(params),
            hash: file_hash::<F, E, H>(params.leaf),
            tables: None,
            commitment,
            proof,
            extension: std::marker::PhantomData,
        }
    }

    /// A file for a multi-table proof made with `params` (sized by [`Workload::params`]) of
    /// `tables`, whose list the prover observed before the commitment ([`Workload::observe`]):
    /// the tables' commitment and the postcard-serialized `PcsProof`.
    pub fn new_tables(params: &Params, tables: Workload, commitment: MerkleCap<F, H::Digest>, proof: Vec<u8>) -> Self {
        Self {
            params: leaves_of::<F, H>(params),
            hash: file_hash::<F, E, H>(params.leaf),
            tables: Some(tables),
            commitment,
            proof,
            extension: std::marker::PhantomData,
        }
    }

    /// The file's one canonical byte form (version 1 for one polynomial, 3 for tables).
    pub fn to_bytes(&self) -> Vec<u8> {
        let version = if self.tables.is_some() { FORMAT_VERSION } else { SINGLE_POLYNOMIAL_VERSION };
        let mut out = postcard::to_allocvec(&Header { magic: MAGIC, version }).expect("header serializes");
        let hash = file_hash::<F, E, H>(self.params.leaf);
        let body = match &self.tables {
            None => postcard::to_allocvec(&BodyV1 { params: &self.params, hash: &hash, commitment: &self.commitment, proof: &self.proof }),
            Some(w) => {
                let tables: Vec<(u8, u32)> = w.tables.iter().map(|&(v, c)| (v as u8, c as u32)).collect();
                postcard::to_allocvec(&TablesBody { params: &self.params, hash: &hash, tables, commitment: &self.commitment, proof: &self.proof })
            }
        };
        out.extend(body.expect("proof file serializes"));
        out
    }

    /// The largest proof file any honest prover writes for `params` (a bound, not the size):
    /// the header plus every opened row, sibling digest, sumcheck message and answer the
    /// configuration asks for, at postcard's widest encoding.
    pub fn max_bytes(params: &Params) -> Result<usize, ProofError> {
        Self::max_bytes_from(params, ParamSource::Flags, Openings::Single)
    }

    /// [`max_bytes`](Self::max_bytes) for a multi-table proof of `tables` (its parameters
    /// sized by [`Workload::params`]).
    pub fn max_bytes_tables(params: &Params, tables: &Workload) -> Result<usize, ProofError> {
        Self::max_bytes_from(params, ParamSource::Flags, Openings::Tables(tables))
    }

    /// The most heap memory reading ([`read`](Self::read)) and verifying a file for `params`
    /// takes, whatever the file holds: the file itself, its decoded proof (at most a small
    /// multiple of its bytes), serde's cautious pre-allocation for length prefixes still being
    /// read (at most 1 MiB each, a few deep), and the verifier's own working memory. The file
    /// is the smaller of the parameters' largest proof and the default [`ReadLimits`]. Measured
    /// in tests/verify_memory.rs.
    pub fn max_verify_memory(params: &Params) -> Result<usize, ProofError> {
        Self::max_verify_memory_with(params, ReadLimits::default())
    }

    /// [`max_verify_memory`](Self::max_verify_memory) under `limits`.
    pub fn max_verify_memory_with(params: &Params, limits: ReadLimits) -> Result<usize, ProofError> {
        let file = FileBound { params_bytes: Self::max_bytes_from(params, ParamSource::Flags, Openings::AnyTables)?, limits }.bytes();
        Ok(VERIFY_FIXED_BYTES.saturating_add(VERIFY_BYTES_PER_FILE_BYTE.saturating_mul(file)).saturating_add(Self::column_memory(file, params.points)))
    }

    /// What the columns of a table list a file of `file` bytes for `points` batches can name
    /// cost the verifier: each column needs an evaluation in the file, and a list holds at most
    /// [`MAX_COLUMNS`](crate::MAX_COLUMNS) ([`MAX_WIDTH`](crate::MAX_WIDTH) a table).
    fn column_memory(file: usize, points: usize) -> usize {
        let columns = (file / (E::DIMENSION * F_BYTES)).min(crate::MAX_COLUMNS).min(points.saturating_mul(crate::MAX_WIDTH));
        VERIFY_BYTES_PER_COLUMN * columns
    }

    fn max_bytes_from(params: &Params, source: ParamSource, evals: Openings<'_>) -> Result<usize, ProofError> {
        let config = params.config_over_from::<E, H::Challenger>(source)?;
        let shape = WhirShape::new(&config, params.points);
        // An extension element's bytes: its base coefficients.
        let ef_bytes = E::DIMENSION * F_BYTES;
        // Rows are at most 2^fold extension elements (the first round's are base elements).
        let row = LEN + (ef_bytes << params.fold);
        let openings = |draws: usize, index_bits: usize| {
            // No draws means every position of the (small) folded domain is opened.
            let rows = if draws == 0 { 1usize << index_bits } else { draws };
            let siblings = (rows * index_bits).min(1 << index_bits);
            2 * LEN + rows * row + LEN + siblings * H::MAX_DIGEST_BYTES
        };
        let sumcheck = |rounds: usize| 1 + 2 * LEN + rounds * (2 * ef_bytes + F_BYTES);
        let mut body = LEN + shape.commitment_ood_samples * ef_bytes + sumcheck(shape.initial_sumcheck.rounds) + LEN;
        for r in &shape.rounds {
            body += 1 + LEN + H::MAX_DIGEST_BYTES + LEN + r.ood_samples * ef_bytes + F_BYTES;
            body += openings(r.query_draws, r.index_bits) + sumcheck(r.sumcheck.rounds);
        }
        body += 1 + LEN + shape.final_poly_len * ef_bytes + F_BYTES;
        body += openings(shape.final_query_draws, shape.final_index_bits) + sumcheck(shape.final_sumcheck.rounds);
        body += LEN;
        body += match evals {
            Openings::Single => params.points * (2 * LEN + 2 * ef_bytes),
            // Per batch two length prefixes and its values; the table list in the header.
            Openings::Tables(w) => params.points * 2 * LEN + w.num_evaluations() * ef_bytes + LEN + w.tables.len() * (1 + LEN),
            // Tables not known yet: each batch the widest table's values.
            Openings::AnyTables => params.points * (2 * LEN + Workload::MAX_EVALUATIONS_PER_TABLE * ef_bytes + 1 + LEN) + LEN,
        };
        Ok(FIXED_BYTES + body)
    }

    /// Parses a proof file, checking everything that can be checked without verifying: the
    /// header, every parameter value, the hash, that the body decodes, and that the file is in
    /// its one canonical byte form (no overlong numbers, nothing appended). Files over the
    /// default [`ReadLimits`] are refused; see [`from_bytes_with`](Self::from_bytes_with).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ProofError> {
        Self::from_bytes_with(bytes, ReadLimits::default())
    }

    /// [`from_bytes`](Self::from_bytes) under `limits`.
    pub fn from_bytes_with(bytes: &[u8], limits: ReadLimits) -> Result<Self, ProofError> {
        let (version, mut params, rest) = parse_prefix(bytes)?;
        refuse_hiding(version)?;
        params.leaf = check_hash::<F, E, H>(rest)?;
        let openings = if version == SINGLE_POLYNOMIAL_VERSION { Openings::Single } else { Openings::AnyTables };
        let bound = FileBound { params_bytes: Self::max_bytes_from(&params, ParamSource::ProofFile, openings)?, limits };
        if bytes.len() > bound.bytes() {
            return Err(bound.exceeded(&format!("it holds {} bytes,", bytes.len())));
        }
        ensure_memory(VERIFY_BYTES_PER_FILE_BYTE.saturating_mul(bytes.len()), || format!("verifying a file of {} bytes", bytes.len()))?;
        let unreadable = |e: postcard::Error| rejected(format!("truncated or corrupted: the header does not decode ({})", decode_error(&e)));
        let (file, tail) = if version == SINGLE_POLYNOMIAL_VERSION {
            let (b, tail): (DecodedBodyV1<F, H::Digest>, &[u8]) = postcard::take_from_bytes(rest).map_err(unreadable)?;
            (
                ProofFileOf {
                    params: Params { leaf: params.leaf, ..b.params },
                    hash: b.hash,
                    tables: None,
                    commitment: b.commitment,
                    proof: b.proof,
                    extension: std::marker::PhantomData,
                },
                tail,
            )
        } else {
            let (b, tail): (DecodedTablesBody<F, H::Digest>, &[u8]) = postcard::take_from_bytes(rest).map_err(unreadable)?;
            let tables = Workload { tables: b.tables.iter().map(|&(v, c)| (usize::from(v), c as usize)).collect() };
            // Everything checked in time linear in the list, before any layout is planned: its
            // bounds, and that the file holds every evaluation it names.
            tables.check().map_err(|e| rejected(format!("its header names {e}")))?;
            ensure_memory(VERIFY_BYTES_PER_COLUMN * tables.columns(), || format!("verifying a list of {} columns", tables.columns()))?;
            let evaluation_bytes = tables.num_evaluations().saturating_mul(E::DIMENSION * F_BYTES);
            if evaluation_bytes > bytes.len() {
                return Err(rejected(format!(
                    "its header names {} tables of {} columns whose openings alone take {evaluation_bytes} bytes, but the file holds {}",
                    tables.tables.len(),
                    tables.columns(),
                    bytes.len()
                )));
            }
            if tables.tables.len() != b.params.points || tables.num_variables(b.params.fold) != b.params.num_vars {
                return Err(rejected(format!(
                    "its header names {} tables stacking to {} variables, but parameters for {} batches of {} variables",
                    tables.tables.len(),
                    tables.num_variables(b.params.fold),
                    b.params.points,
                    b.params.num_vars
                )));
            }
            let exact = FileBound { params_bytes: Self::max_bytes_from(&b.params, ParamSource::ProofFile, Openings::Tables(&tables))?, limits };
            if bytes.len() > exact.bytes() {
                return Err(exact.exceeded(&format!("it holds {} bytes,", bytes.len())));
            }
            (
                ProofFileOf {
                    params: Params { leaf: params.leaf, ..b.params },
                    hash: b.hash,
                    tables: Some(tables),
                    commitment: b.commitment,
                    proof: b.proof,
                    extension: std::marker::PhantomData,
                },
                tail,
            )
        };
        if !tail.is_empty() {
            return Err(rejected(format!("{} unexpected bytes after the proof", tail.len())));
        }
        if file.commitment.roots().len() != 1 {
            return Err(rejected(format!("the commitment holds {} roots; a proof file has one", file.commitment.roots().len())));
        }
        let proof = file.decode_body()?;
        if let Some(tables) = &file.tables {
            check_openings::<F, E, H>(&proof, tables)?;
        }
        if file.to_bytes() != bytes {
            return Err(rejected(
                "it is not in canonical form (it re-encodes to different bytes: an overlong number or a re-encoded field); every proof has exactly one byte form",
            ));
        }
        Ok(file)
    }

    /// Reads and parses a proof file from `reader` without ever holding more bytes than a proof
    /// can have: for the `expected` parameters if given, else for the parameters in its header
    /// (checked first), and never more than the default [`ReadLimits`].
    pub fn read(reader: impl Read, expected: Option<&Params>) -> Result<Self, ProofError> {
        Self::read_with(reader, expected, ReadLimits::default())
    }

    /// [`read`](Self::read) under `limits`: raise them only for a large proof you trust.
    pub fn read_with(mut reader: impl Read, expected: Option<&Params>, limits: ReadLimits) -> Result<Self, ProofError> {
        let mut bytes = Vec::new();
        (&mut reader).take(PREFIX_BYTES as u64).read_to_end(&mut bytes).map_err(|e| rejected(format!("reading it failed: {e}")))?;
        let (version, mut params, rest) = parse_prefix(&bytes)?;
        refuse_hiding(version)?;
        params.leaf = check_hash::<F, E, H>(rest)?;
        // (A multi-table file's exact bound needs its table list: it is checked once read.)
        let openings = if version == SINGLE_POLYNOMIAL_VERSION { Openings::Single } else { Openings::AnyTables };
        let params_bytes = match expected {
            // A file for other parameters is refused as such before its body is read (its size
            // bound is the expected parameters', which the body would otherwise be held to).
            Some(p) if version == SINGLE_POLYNOMIAL_VERSION => {
                mismatch(&params, p)?;
                Self::max_bytes_from(p, ParamSource::Flags, openings)?
            }
            // A multi-table file is read within its own parameters' bound: which tables it
            // proves, and so what is wrong with it, is known once it is read (`verify_tables`).
            _ => Self::max_bytes_from(&params, ParamSource::ProofFile, openings)?,
        };
        read_bounded(&mut reader, &FileBound { params_bytes, limits }, &mut bytes)?;
        Self::from_bytes_with(&bytes, limits)
    }

    /// Every proof-of-work witness in the proof, in the proof's order (the initial sumcheck's,
    /// then each round's query grind and sumcheck's, the final ones last; a sumcheck round that
    /// grinds at 0 bits carries none, a query grind at 0 bits carries 0). A grinder that returns the smallest
    /// witness tried `w + 1` candidates for a witness `w`, so their sum is the grinding work
    /// the proof cost. Decoding only: nothing is verified.
    pub fn pow_witnesses(&self) -> Result<Vec<u32>, ProofError> {
        let whir = self.decode_body()?.whir;
        let mut out: Vec<u32> = whir.initial_sumcheck.pow_witnesses.iter().map(|w| w.as_canonical_u32()).collect();
        for round in &whir.rounds {
            out.push(round.pow_witness.as_canonical_u32());
            out.extend(round.sumcheck.pow_witnesses.iter().map(|w| w.as_canonical_u32()));
        }
        out.push(whir.final_pow_witness.as_canonical_u32());
        if let Some(s) = &whir.final_sumcheck {
            out.extend(s.pow_witnesses.iter().map(|w| w.as_canonical_u32()));
        }
        Ok(out)
    }

    /// The `PcsProof` in the body, decoded and checked to be canonical.
    fn decode_body(&self) -> Result<Proof<F, E, H>, ProofError> {
        decode_canonical(&self.proof, "the proof body")
    }

    /// Checks the proof against the parameters the verifier expects, with Plonky3's own
    /// verifier, MMCS and challenger of the hash (`H::Mmcs`, `H::Challenger`). A file made with any other
    /// parameters is rejected, naming each difference.
    pub fn verify(&self, expected: &Params) -> Result<(), ProofError> {
        if let Some(w) = &self.tables {
            return Err(ProofError::ParamsMismatch(format!(
                "the file proves {} tables ({}), not one polynomial; verify it with those tables (`whir verify --tables {}`, `ProofFile::verify_tables`)",
                w.tables.len(),
                w.spec(),
                w.spec()
            )));
        }
        mismatch(&self.params, expected)?;
        self.verify_as(expected, ParamSource::Flags)
    }

    /// [`verify`](Self::verify) for a multi-table proof of `tables` (each opened as
    /// [`Workload::protocol`] says), with parameters `expected` for one table list (sized by
    /// [`Workload::params`]): a file of other tables is rejected, naming them.
    pub fn verify_tables(&self, expected: &Params, tables: &Workload) -> Result<(), ProofError> {
        match &self.tables {
            None => return Err(ProofError::ParamsMismatch("the file proves one polynomial, not tables; verify it without a table list".into())),
            Some(w) if w != tables => {
                return Err(ProofError::ParamsMismatch(format!("the file proves the tables {}, not the {} expected", w.spec(), tables.spec())));
            }
            Some(_) => {}
        }
        // (A table list sets the variables and the points.)
        let flags: Vec<String> = self.params.fields().iter().filter(|(k, _)| *k != "vars" && *k != "points").map(|(k, v)| format!("--{k} {v}")).collect();
        mismatch_with(&self.params, expected, format!("--tables {} {}", tables.spec(), flags.join(" ")))?;
        self.verify_as(expected, ParamSource::Flags)
    }

    /// Checks the proof against the parameters its own header names, accepting them only if
    /// they clear `floor`. Use [`verify`](Self::verify) where the verifier knows what it
    /// expects: a file's parameters are the prover's choice.
    pub fn verify_file_params(&self, floor: FileParamsFloor) -> Result<(), ProofError> {
        floor.check(&self.params)?;
        self.verify_as(&self.params, ParamSource::ProofFile)
    }

    fn verify_as(&self, params: &Params, source: ParamSource) -> Result<(), ProofError> {
        let config = params.config_over_from::<E, H::Challenger>(source)?;
        let proof = self.decode_body()?;
        let pcs = StockPcs::<F, E, H>::new(config, Radix2DFTSmallBatch::default(), H::mmcs(params.leaf));
        let mut challenger = H::challenger();
        let protocol = match &self.tables {
            Some(w) => {
                // The openings' shape before the protocol is built, and the list bound first, as
                // the prover bound it.
                check_openings::<F, E, H>(&proof, w)?;
                w.observe(&mut challenger);
                w.protocol(params.fold)
            }
            None => opening_protocol(params),
        };
        pcs.verify(&self.commitment, &proof, &mut challenger, protocol).map_err(|e| ProofError::Verify(describe(&e)))
    }
}
