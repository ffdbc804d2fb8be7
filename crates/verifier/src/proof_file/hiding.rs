//! Hiding proof files (format version 4): a zero-knowledge proof of one polynomial made with
//! Plonky3's hiding PCS (`p3_whir::HidingWhirPcs`, HVZK-WHIR), its mask parameters named in the
//! header, checked with p3-whir's own hiding verifier.
//!
//! The opening points are not the prover's choice: both sides draw them from a challenger of
//! their own that observes the format version and the commitment ([`hiding_points`];
//! [`hiding_points_over`] for Keccak's, with its challenger), so a
//! proof answers for a point fixed only once the polynomial is. The transcript of the proof
//! itself starts from a fresh challenger, as `HidingWhirPcs::commit` and `verify` expect.
//!
//! Read as the plain files are: the header and every parameter checked before anything is
//! built, at most [`ReadLimits`] bytes read whatever the header claims, the memory to verify
//! reserved fallibly first, one canonical byte form.

use p3_challenger::{CanObserve, FieldChallenger};
use p3_multilinear_util::point::Point;
use p3_whir::{HidingWhirPcs, ZkParameters, ZkWhirConfig, ZkWhirProof};
use rand::rngs::StdRng;
use rand::SeedableRng;

use super::*;
use crate::Commitment;

/// The format version of hiding proof files.
pub const HIDING_VERSION: u16 = 4;

/// The mask parameters of a hiding proof (p3-whir's `ZkParameters`), as a file names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZkMasks {
    /// The message length of the masked sumcheck's mask code (`ell_zk`, at least 3).
    pub ell_zk: u32,
    /// log2 of the inverse rate of the mask codewords.
    pub mask_log_inv_rate: u32,
}

impl ZkMasks {
    /// p3-whir's own tests' masks: `ell_zk` 4, mask codewords at rate 1/2.
    pub const DEFAULT: ZkMasks = ZkMasks { ell_zk: 4, mask_log_inv_rate: 1 };
    /// The largest `ell_zk` a file may name (each sumcheck round carries `ell_zk - 1` values).
    pub const MAX_ELL_ZK: u32 = 64;
    /// The largest mask rate exponent a file may name.
    pub const MAX_MASK_LOG_INV_RATE: u32 = 8;

    /// An error unless both values are within what a hiding run takes (and what a verifier
    /// builds a configuration for).
    pub fn check(&self) -> Result<(), ProofError> {
        if !(3..=Self::MAX_ELL_ZK).contains(&self.ell_zk) || !(1..=Self::MAX_MASK_LOG_INV_RATE).contains(&self.mask_log_inv_rate) {
            return Err(ProofError::Params(format!(
                "mask parameters ell_zk = {}, mask rate 2^-{}: ell_zk must be 3..={} and the mask rate exponent 1..={}",
                self.ell_zk,
                self.mask_log_inv_rate,
                Self::MAX_ELL_ZK,
                Self::MAX_MASK_LOG_INV_RATE
            )));
        }
        Ok(())
    }

    /// As p3-whir takes them.
    pub fn parameters(&self) -> ZkParameters {
        ZkParameters { ell_zk: self.ell_zk as usize, mask_log_inv_rate: self.mask_log_inv_rate as usize }
    }
}

impl std::fmt::Display for ZkMasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ell_zk {}, masks at rate 2^-{}", self.ell_zk, self.mask_log_inv_rate)
    }
}

/// The hiding configuration for `params` and `masks` over the challenger `C`: the plain
/// configuration checked first (every parameter value), then p3-whir's hiding one, with what to
/// change where the masks' randomness does not fit a code's slack.
pub fn zk_config<F: WhirField, E: WhirExtension<F>, C>(params: &Params, masks: ZkMasks, source: ParamSource) -> Result<ZkWhirConfig<E, F, C>, ProofError>
where
    C: p3_challenger::FieldChallenger<F> + p3_challenger::GrindingChallenger<Witness = F>,
{
    masks.check()?;
    params.config_over_from::<E, C>(source)?;
    ZkWhirConfig::<E, F, C>::new(params.num_vars, params.protocol_parameters(), masks.parameters()).map_err(|e| {
        ProofError::Params(format!(
            "no hiding configuration for n = {}, fold {}, rate 2^-{} with {masks} ({e:?}): the masks' randomness must fit each code's slack; \
             try more variables, a larger rate exponent or a smaller fold",
            params.num_vars, params.fold, params.log_inv_rate
        ))
    })
}

/// The points a hiding proof of `params.points` points over the commitment `commitment`
/// answers for: drawn from a challenger that observes the format version and the commitment
/// (Poseidon2's; [`hiding_points_over`] for another hash).
pub fn hiding_points<F: WhirField, E: WhirExtension<F>>(commitment: &Commitment<F>, params: &Params) -> Vec<Point<E>> {
    hiding_points_over::<F, E, Poseidon2>(commitment, params)
}

/// [`hiding_points`] of a proof hashed by `H`: drawn from `H`'s challenger.
pub fn hiding_points_over<F: WhirField, E: WhirExtension<F>, H: ProofHash<F>>(commitment: &MerkleCap<F, H::Digest>, params: &Params) -> Vec<Point<E>> {
    let mut challenger = H::challenger();
    challenger.observe(F::from_u32(u32::from(HIDING_VERSION)));
    challenger.observe(commitment.clone());
    (0..params.points).map(|_| Point::new((0..params.num_vars).map(|_| challenger.sample_algebra_element::<E>()).collect())).collect()
}

type StockHidingPcs<F, E, H> = HidingWhirPcs<E, F, Radix2DFTSmallBatch<F>, <H as ProofHash<F>>::Mmcs, <H as ProofHash<F>>::Challenger, StdRng>;
type HidingProof<F, E, H> = ZkWhirProof<F, E, <H as ProofHash<F>>::Mmcs>;

/// A hiding proof file over `F` with its challenges in `E` and its trees and transcript hashed
/// by `H` ([`Poseidon2`] by default, or [`Keccak`]; see the module docs).
#[derive(Clone, Debug)]
pub struct HidingProofFileOf<F: WhirField, E: WhirExtension<F> = EF<F>, H: ProofHash<F> = Poseidon2> {
    /// The parameters the prover says it used (the plain WHIR schedule the hiding run reuses).
    /// Untrusted: the verifier compares them with its own.
    pub params: Params,
    /// The mask parameters the prover says it used. Untrusted, as the parameters.
    pub masks: ZkMasks,
    /// The Merkle root of the committed (randomized) encoding.
    pub commitment: MerkleCap<F, H::Digest>,
    /// postcard-serialized `ZkWhirProof<F, E, H::Mmcs>`.
    pub proof: Vec<u8>,
    extension: std::marker::PhantomData<(E, H)>,
}

/// The body after the header: the parameters and the hash first, as in every version.
#[derive(Serialize, Deserialize)]
struct HidingBody<P, S, M, C, B> {
    params: P,
    hash: S,
    masks: M,
    commitment: C,
    proof: B,
}

type DecodedHidingBody<F, D> = HidingBody<Params, String, ZkMasks, MerkleCap<F, D>, Vec<u8>>;

impl<F: WhirField, E: WhirExtension<F>, H: ProofHash<F>> HidingProofFileOf<F, E, H> {
    /// A file for a hiding proof made with `params` and `masks`: its commitment and its
    /// postcard-serialized `ZkWhirProof`.
    /// (A Poseidon2 leaf width does not apply to [`Keccak`]'s leaves: its file names the default.)
    pub fn new(params: &Params, masks: ZkMasks, commitment: MerkleCap<F, H::Digest>, proof: Vec<u8>) -> Self {
        Self { params: leaves_of::<F, H>(params), masks, commitment, proof, extension: std::marker::PhantomData }
    }

    /// The file's one canonical byte form.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = postcard::to_allocvec(&Header { magic: MAGIC, version: HIDING_VERSION }).expect("header serializes");
        let hash = file_hash::<F, E, H>(self.params.leaf);
        let body = HidingBody { params: &self.params, hash: &hash, masks: &self.masks, commitment: &self.commitment, proof: &self.proof };
        out.extend(postcard::to_allocvec(&body).expect("proof file serializes"));
        out
    }

    /// Parses a hiding proof file, checking everything that can be checked without verifying:
    /// the header, every parameter value, the mask parameters, the hash, that the body decodes
    /// and that the file is in its one canonical byte form. Files over `limits` are refused.
    pub fn from_bytes_with(bytes: &[u8], limits: ReadLimits) -> Result<Self, ProofError> {
        let (version, params, rest) = parse_prefix(bytes)?;
        if version != HIDING_VERSION {
            return Err(rejected(format!("format version {version} is a proof that does not hide; read it as a `ProofFile` (`whir verify` reads either)")));
        }
        let leaf = check_hash::<F, E, H>(rest)?;
        if bytes.len() > limits.max_file_bytes {
            return Err(too_large(bytes.len(), limits));
        }
        let bound = FileBound { params_bytes: Self::max_bytes_from(&Params { leaf, ..params.clone() }, prefix_masks(rest)?, ParamSource::ProofFile)?, limits };
        if bytes.len() > bound.bytes() {
            return Err(bound.exceeded(&format!("at {} bytes it is", bytes.len())));
        }
        ensure_memory(VERIFY_BYTES_PER_FILE_BYTE.saturating_mul(bytes.len()), || format!("verifying a file of {} bytes", bytes.len()))?;
        let (b, tail): (DecodedHidingBody<F, H::Digest>, &[u8]) =
            postcard::take_from_bytes(rest).map_err(|e| rejected(format!("truncated or corrupted: the header does not decode ({})", decode_error(&e))))?;
        if !tail.is_empty() {
            return Err(rejected(format!("{} unexpected bytes after the proof", tail.len())));
        }
        b.masks.check()?;
        if b.commitment.roots().len() != 1 {
            return Err(rejected(format!("the commitment holds {} roots; a proof file has one", b.commitment.roots().len())));
        }
        let file = Self { params: Params { leaf, ..params }, masks: b.masks, commitment: b.commitment, proof: b.proof, extension: std::marker::PhantomData };
        file.decode_body()?;
        if file.to_bytes() != bytes {
            return Err(rejected(
                "it is not in canonical form (it re-encodes to different bytes: an overlong number or a re-encoded field); every proof has exactly one byte form",
            ));
        }
        Ok(file)
    }

    /// Reads and parses a hiding proof file from `reader` without ever holding more than
    /// `limits` bytes, whatever its header claims.
    pub fn read_with(mut reader: impl Read, limits: ReadLimits) -> Result<Self, ProofError> {
        let mut bytes = Vec::new();
        (&mut reader).take(PREFIX_BYTES as u64).read_to_end(&mut bytes).map_err(|e| rejected(format!("reading it failed: {e}")))?;
        let (version, params, rest) = parse_prefix(&bytes)?;
        if version != HIDING_VERSION {
            return Err(rejected(format!("format version {version} is a proof that does not hide; read it as a `ProofFile` (`whir verify` reads either)")));
        }
        let mut params = params;
        params.leaf = check_hash::<F, E, H>(rest)?;
        let masks = prefix_masks(rest)?;
        // Read within the bound its own parameters and masks give (no proof for them is larger).
        let bound = FileBound { params_bytes: Self::max_bytes_from(&params, masks, ParamSource::ProofFile)?, limits };
        read_bounded(&mut reader, &bound, &mut bytes)?;
        Self::from_bytes_with(&bytes, limits)
    }

    /// The largest hiding proof file any honest prover writes for `params` and `masks` (a
    /// bound, not the size): the header plus every value the configuration asks for — the
    /// masked sumchecks' wires and grinds, each round's roots, out-of-domain answers, grind and
    /// opened rows with their sibling digests, the base case's reveals and openings of the last
    /// oracle, the fresh codeword and every mask group — at postcard's widest encoding.
    pub fn max_bytes(params: &Params, masks: ZkMasks) -> Result<usize, ProofError> {
        Self::max_bytes_from(params, masks, ParamSource::Flags)
    }

    fn max_bytes_from(params: &Params, masks: ZkMasks, source: ParamSource) -> Result<usize, ProofError> {
        masks.check()?;
        let config = zk_config::<F, E, H::Challenger>(params, masks, source)?;
        let ef = E::DIMENSION * F_BYTES;
        let commitment = LEN + H::MAX_DIGEST_BYTES;
        // `rows` opened rows of `row` bytes each (repeats kept), with a pruned multi-proof over
        // a tree of 2^index_bits leaves.
        let opening = |rows: usize, row: usize, index_bits: usize| {
            let rows = if rows == 0 { 1usize << index_bits } else { rows };
            let siblings = rows.saturating_mul(index_bits).min(1usize << index_bits.min(usize::BITS as usize - 1));
            LEN + rows * (LEN + row) + LEN + siblings * H::MAX_DIGEST_BYTES
        };
        let ell = config.zk().ell_zk;
        let wire = ell.max(3) - 1;
        let batch = |rounds: usize| ef + LEN + rounds * (LEN + wire * ef) + LEN + rounds * F_BYTES;
        let rounds = config.n_rounds();
        // Every masked batch: the first fold's and one per round.
        let mut body = LEN + params.points * ef;
        body += LEN + (0..=rounds).map(|r| batch(config.round_folding_factor(r))).sum::<usize>();
        body += LEN + (rounds + 1) * commitment;
        body += LEN;
        for (r, round) in config.round_parameters().iter().enumerate() {
            // The old oracle's rows: 2^fold base values in round 0, extension values after.
            let row = ef << config.round_folding_factor(r);
            body += 2 * commitment + LEN + round.ood_samples * ef + F_BYTES + 1 + opening(round.num_queries, row, round.log_folded_domain_size);
        }
        let base = config.base_case_config();
        let code = &base.code;
        let last_row = ef << config.round_folding_factor(rounds);
        let code_bits = code.domain_size.max(1).ilog2() as usize;
        body += commitment + LEN + base.mask_groups.len() * commitment + ef;
        body += LEN + code.message_len * ef + LEN + code.randomness_len * ef;
        body += LEN + base.mask_groups.iter().map(|g| g.width * (2 * LEN + (g.shape.message_len + g.shape.randomness_len) * ef)).sum::<usize>();
        body += F_BYTES + 1 + opening(base.num_queries, last_row, code_bits) + opening(base.num_queries, ef, code_bits);
        body += LEN + base.mask_groups.iter().map(|g| 2 * opening(base.mask_queries, g.width * ef, g.shape.domain_size.max(1).ilog2() as usize)).sum::<usize>();
        // The header, the mask parameters, the commitment and the proof's length prefix.
        Ok(FIXED_BYTES + 2 * LEN + commitment + LEN + body)
    }

    /// The `ZkWhirProof` in the body, decoded and checked to be canonical.
    fn decode_body(&self) -> Result<HidingProof<F, E, H>, ProofError> {
        decode_canonical(&self.proof, "the proof body")
    }

    /// The evaluations the proof claims, one per point of [`hiding_points_over`] (decoding only).
    pub fn evaluations(&self) -> Result<Vec<E>, ProofError> {
        Ok(self.decode_body()?.evals)
    }
}

impl<F: WhirField, E: WhirExtension<F> + p3_field::TwoAdicField, H: ProofHash<F>> HidingProofFileOf<F, E, H>
where
    rand::distr::StandardUniform: rand::distr::Distribution<E> + rand::distr::Distribution<F>,
{
    /// Checks the proof against the parameters and masks the verifier expects, with p3-whir's
    /// own hiding verifier, the hash's MMCS and challenger (`H::Mmcs`, `H::Challenger`). A file made with any other
    /// parameters or masks is rejected, naming each difference.
    pub fn verify(&self, expected: &Params, masks: ZkMasks) -> Result<(), ProofError> {
        mismatch(&self.params, expected)?;
        if self.masks != masks {
            return Err(ProofError::ParamsMismatch(format!("the proof file's masks are {}, not the {masks} expected", self.masks)));
        }
        self.verify_as(expected, ParamSource::Flags)
    }

    /// Checks the proof against the parameters and masks its own header names, accepting them
    /// only if they clear `floor` (as [`ProofFileOf::verify_file_params`]).
    pub fn verify_file_params(&self, floor: FileParamsFloor) -> Result<(), ProofError> {
        floor.check(&self.params)?;
        self.verify_as(&self.params, ParamSource::ProofFile)
    }

    fn verify_as(&self, params: &Params, source: ParamSource) -> Result<(), ProofError> {
        let config = zk_config::<F, E, H::Challenger>(params, self.masks, source)?;
        let proof = self.decode_body()?;
        let points = hiding_points_over::<F, E, H>(&self.commitment, params);
        if proof.evals.len() != points.len() {
            return Err(rejected(format!("the proof claims {} evaluations for {} points", proof.evals.len(), points.len())));
        }
        // The verifier draws no randomness: the generator is a stand-in the type asks for.
        let pcs = StockHidingPcs::<F, E, H>::new(config, Radix2DFTSmallBatch::default(), H::mmcs(params.leaf), StdRng::seed_from_u64(0));
        let mut challenger = H::challenger();
        pcs.verify(&self.commitment, &proof, &mut challenger, points)
            .map_err(|e| ProofError::Verify(format!("p3-whir's hiding verifier rejects the proof: {e:?}")))
    }
}

/// The mask parameters a hiding file's body names after its parameters and hash (`rest`: the
/// body, as `parse_prefix` leaves it), checked to be in range.
fn prefix_masks(rest: &[u8]) -> Result<ZkMasks, ProofError> {
    let ((_, _, masks), _): ((Params, String, ZkMasks), &[u8]) =
        postcard::take_from_bytes(rest).map_err(|e| rejected(format!("truncated or corrupted: the mask parameters do not decode ({})", decode_error(&e))))?;
    masks.check()?;
    Ok(masks)
}

/// A hiding file over the read limit.
fn too_large(bytes: usize, limits: ReadLimits) -> ProofError {
    rejected(format!(
        "it holds {bytes} bytes or more, over the {} bytes ({}) a verifier reads from one proof file; raise the limit only for a proof you trust \
         (`whir verify --max-proof-mib`, `ReadLimits` in the library)",
        limits.max_file_bytes,
        mib(limits.max_file_bytes)
    ))
}

/// A hiding file read as a plain one: refused, naming the reader that takes it.
pub(super) fn refuse_hiding(version: u16) -> Result<(), ProofError> {
    if version == HIDING_VERSION {
        return Err(rejected(format!(
            "format version {HIDING_VERSION} is a hiding (zero-knowledge) proof; read it as a `HidingProofFile` (`whir verify` reads either)"
        )));
    }
    Ok(())
}

/// Whether a file's first bytes are a hiding proof file's header.
pub fn proof_file_is_hiding(prefix: &[u8]) -> bool {
    parse_prefix(prefix).is_ok_and(|(version, _, _)| version == HIDING_VERSION)
}
