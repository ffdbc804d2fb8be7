//! `GpuKeccakHash<F>`: the byte challenger inside Plonky3's Keccak transcript,
//! `SerializingChallenger32<F, HashChallenger<u8, Keccak256Hash, 32>>`, with its proof-of-work
//! search on the GPU. `SerializingChallenger32<F, GpuKeccakHash<F>>` observes and samples the
//! same bytes as Plonky3's (the verifier keeps Plonky3's type); its `grind` asks the inner
//! challenger's [`ByteGrindingChallenger::find_witness`], which this one answers on the GPU with
//! the smallest passing candidate (Plonky3's parallel search returns any), checked on the host
//! before it is returned; without a GPU, or for a search it does not recognise, Plonky3's own
//! search answers.

use p3_challenger::{ByteGrindingChallenger, CanObserve, CanSample, HashChallenger};
use p3_keccak::Keccak256Hash;
use p3_symmetric::CryptographicHasher;

use super::GpuKeccak;
use crate::field::GpuField;

/// Plonky3's `HashChallenger<u8, Keccak256Hash, 32>` (observed bytes buffered; a sample hashes
/// them, chains the digest as the next input and pops the digest's bytes from its end), grinding
/// on the GPU where one is given (see the module docs).
#[derive(Clone)]
pub struct GpuKeccakHash<F: GpuField> {
    input: Vec<u8>,
    output: Vec<u8>,
    gpu: Option<GpuKeccak>,
    _field: std::marker::PhantomData<F>,
}

impl<F: GpuField> GpuKeccakHash<F> {
    /// A challenger that first observes `initial_state` (as `HashChallenger::new`), grinding on
    /// `gpu` (on the host without one).
    pub fn new(initial_state: Vec<u8>, gpu: Option<GpuKeccak>) -> Self {
        Self { input: initial_state, output: Vec::new(), gpu, _field: std::marker::PhantomData }
    }

    fn flush(&mut self) {
        let digest = Keccak256Hash.hash_iter(self.input.drain(..));
        self.input.extend_from_slice(&digest);
        self.output.clear();
        self.output.extend_from_slice(&digest);
    }

    /// The GPU's answer to a grind by `SerializingChallenger32<F, _>`, where `encode` and
    /// `accepts` are the ones it passes (candidate c encoded as its stored form, a sampled
    /// little-endian word accepted where its masked bits are zero) and this challenger holds
    /// the 32-byte digest its squeeze chained; None otherwise (the host searches instead).
    fn gpu_witness<const W: usize, const S: usize>(
        &self,
        num_candidates: u64,
        encode: &impl Fn(u64) -> [u8; W],
        accepts: &impl Fn([u8; S]) -> bool,
    ) -> Option<u64> {
        let gpu = self.gpu.as_ref()?;
        let prefix: &[u8; 32] = self.input.as_slice().try_into().ok()?;
        if W != 4 || S != 4 || num_candidates != u64::from(F::ORDER_U32) {
            return None;
        }
        let stored = |c: u64| F::from_u32(c as u32).to_unique_u32().to_le_bytes();
        if [0, 1, 2, 0x1234_5678 % u64::from(F::ORDER_U32), num_candidates - 1].iter().any(|&c| encode(c)[..] != stored(c)[..]) {
            return None;
        }
        let mask = sampled_mask(accepts)?;
        let bits = mask.count_ones() as usize;
        let found = match gpu.grind_serializing::<F>(prefix, bits) {
            Ok(found) => found?,
            Err(e) => {
                tracing::debug!("the GPU Keccak grind failed ({e}); searching on the host");
                return None;
            }
        };
        // The host's check with the caller's own encode and accepts.
        let mut probe = self.clone();
        probe.observe_slice(&encode(u64::from(found)));
        accepts(probe.sample_array::<S>()).then_some(u64::from(found))
    }
}

/// The mask of a grind's `accepts` where it is `u32::from_le_bytes(sampled) & mask == 0` for a
/// mask of low bits (as `SerializingChallenger32` passes it), read back by probing each bit;
/// None for any other test.
fn sampled_mask<const S: usize>(accepts: &impl Fn([u8; S]) -> bool) -> Option<u32> {
    if S != 4 {
        return None;
    }
    let word = |w: u32| -> [u8; S] { std::array::from_fn(|i| w.to_le_bytes()[i]) };
    if !accepts(word(0)) {
        return None;
    }
    let mask = (0..32).filter(|&k| !accepts(word(1 << k))).fold(0u32, |m, k| m | (1 << k));
    let low_bits = mask != 0 && (mask & (mask + 1)) == 0;
    // Spot checks that it is the masked test: high bits alone pass, any masked bit fails.
    let consistent = low_bits && accepts(word(!mask)) && !accepts(word(mask)) && !accepts(word(u32::MAX));
    consistent.then_some(mask)
}

impl<F: GpuField> CanObserve<u8> for GpuKeccakHash<F> {
    fn observe(&mut self, value: u8) {
        self.output.clear();
        self.input.push(value);
    }

    fn observe_slice(&mut self, values: &[u8]) {
        if !values.is_empty() {
            self.output.clear();
            self.input.extend_from_slice(values);
        }
    }
}

impl<F: GpuField> CanSample<u8> for GpuKeccakHash<F> {
    fn sample(&mut self) -> u8 {
        if self.output.is_empty() {
            self.flush();
        }
        self.output.pop().expect("a flush leaves 32 bytes")
    }
}

impl<F: GpuField> ByteGrindingChallenger for GpuKeccakHash<F> {
    fn find_witness<const W: usize, const S: usize>(
        &self,
        num_candidates: u64,
        encode: impl Fn(u64) -> [u8; W] + Sync,
        accepts: impl Fn([u8; S]) -> bool + Sync,
    ) -> Option<u64> {
        if let Some(found) = self.gpu_witness(num_candidates, &encode, &accepts) {
            return Some(found);
        }
        // Plonky3's own search from the same state (a candidate's observation discards the
        // buffered output, so only the input matters).
        HashChallenger::<u8, Keccak256Hash, 32>::new(self.input.clone(), Keccak256Hash).find_witness(num_candidates, encode, accepts)
    }
}
