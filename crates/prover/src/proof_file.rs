//! Proof files: a small versioned header (parameters, commitment) and Plonky3's `PcsProof`,
//! serialized with postcard. Verification uses the stock p3-whir verifier and challenger.

use p3_challenger::DuplexChallenger;
use p3_commit::MultilinearPcs;
use p3_dft::Radix2DFTSmallBatch;
use p3_whir::{PcsProof, WhirProver};
use serde::{Deserialize, Serialize};
use whir_gpu::mmcs::{CpuMmcs, LeafHash, NodeCompress};

use crate::backend::{opening_protocol, permutation, ProverLayout, ProverOutput};
use crate::error::ProverError;
use crate::params::Params;
use crate::{Commitment, EF, F};

const MAGIC: [u8; 8] = *b"WHIRWGPU";
/// Bumped on any change of the layout below.
pub const FORMAT_VERSION: u16 = 1;
/// The only hash so far.
pub const HASH_ID: &str = "poseidon2-babybear-16/p3-default";

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Header {
    magic: [u8; 8],
    version: u16,
}

/// A proof with what the verifier needs to check it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProofFile {
    pub params: Params,
    pub hash: String,
    pub commitment: Commitment,
    /// postcard-serialized `PcsProof<BabyBear, BabyBear^4, MerkleTreeMmcs>`.
    pub proof: Vec<u8>,
}

impl ProofFile {
    pub fn new(params: &Params, output: &ProverOutput) -> Self {
        Self { params: params.clone(), hash: HASH_ID.into(), commitment: output.commitment.clone(), proof: output.proof.clone() }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = postcard::to_allocvec(&Header { magic: MAGIC, version: FORMAT_VERSION }).expect("header serializes");
        out.extend(postcard::to_allocvec(self).expect("proof file serializes"));
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ProverError> {
        let (header, rest): (Header, &[u8]) = postcard::take_from_bytes(bytes)
            .map_err(|e| ProverError::ProofFile(format!("not a whir-wgpu proof file (header unreadable: {e})")))?;
        if header.magic != MAGIC {
            return Err(ProverError::ProofFile("not a whir-wgpu proof file (bad magic)".into()));
        }
        if header.version != FORMAT_VERSION {
            return Err(ProverError::ProofFile(format!(
                "format version {} is not supported (this build reads version {FORMAT_VERSION})",
                header.version
            )));
        }
        let (file, tail): (ProofFile, &[u8]) = postcard::take_from_bytes(rest)
            .map_err(|e| ProverError::ProofFile(format!("truncated or corrupted ({e})")))?;
        if !tail.is_empty() {
            return Err(ProverError::ProofFile(format!("{} unexpected bytes after the proof", tail.len())));
        }
        if file.hash != HASH_ID {
            return Err(ProverError::ProofFile(format!("unknown hash {:?} (expected {HASH_ID})", file.hash)));
        }
        Ok(file)
    }

    /// Checks the proof with Plonky3's own verifier, `MerkleTreeMmcs` and `DuplexChallenger`.
    pub fn verify(&self) -> Result<(), ProverError> {
        type StockPcs = WhirProver<EF, F, Radix2DFTSmallBatch<F>, CpuMmcs, DuplexChallenger<F, p3_baby_bear::Poseidon2BabyBear<16>, 16, 8>, ProverLayout>;
        let config = self.params.config::<DuplexChallenger<F, p3_baby_bear::Poseidon2BabyBear<16>, 16, 8>>()?;
        let perm = permutation();
        let pcs = StockPcs::new(config, Radix2DFTSmallBatch::default(), CpuMmcs::new(LeafHash::new(perm.clone()), NodeCompress::new(perm.clone()), 0));
        let (proof, tail): (PcsProof<F, EF, CpuMmcs>, &[u8]) = postcard::take_from_bytes(&self.proof)
            .map_err(|e| ProverError::ProofFile(format!("proof body truncated or corrupted ({e})")))?;
        if !tail.is_empty() {
            return Err(ProverError::ProofFile(format!("{} unexpected bytes after the proof body", tail.len())));
        }
        let mut challenger = DuplexChallenger::new(perm);
        pcs.verify(&self.commitment, &proof, &mut challenger, opening_protocol(&self.params))
            .map_err(|e| ProverError::Verify(format!("{e:?}")))
    }
}
