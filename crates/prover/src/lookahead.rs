//! The challengers the WHIR protocol runs over, and what each can play ahead of the transcript.
//!
//! The protocol (the driver, the PCS) takes any challenger p3-whir's `WhirProver` takes: a
//! [`WhirChallenger`]. Speculation — sumcheck rounds chained where the tables lie, each round's
//! head (commitment, out-of-domain answers, query grind) and grinds played ahead on the device
//! from a published transcript state — is offered through the trait's methods, which by default
//! offer nothing: a challenger that cannot speculate (Plonky3's own `DuplexChallenger`) has the
//! protocol play every step on the host. The protocol checks every value played ahead against
//! the transcript it replays.

use p3_challenger::{CanObserve, CanSampleUniformBits, DuplexChallenger, FieldChallenger, GrindingChallenger};
use p3_field::Field;
use p3_symmetric::CryptographicPermutation;
use whir_gpu::{GpuChallenger, GrindAhead, InnerChallenger, PowClock};

use crate::{Commitment, ProverField};

/// A challenger the protocol runs over: what p3-whir's `WhirProver` accepts (observe and sample
/// field elements, grind, sample bits, observe a commitment), cloned for trial runs, with what
/// it can play ahead of the transcript (nothing, by default).
pub trait WhirChallenger<F: ProverField>:
    FieldChallenger<F> + GrindingChallenger<Witness = F> + CanSampleUniformBits<F> + CanObserve<Commitment<F>> + Clone
{
    /// A copy of the transcript for trial runs (a claim's point read off a run on the copy),
    /// sharing nothing with this challenger's speculation.
    type Trial: FieldChallenger<F> + GrindingChallenger<Witness = F> + Clone;

    /// The transcript as it is now, as a [`Trial`](Self::Trial).
    fn trial(&self) -> Self::Trial;

    /// Publishes the transcript state after every operation until [`stop_tracking`](Self::stop_tracking),
    /// for steps that play the transcript where the data lies (sumcheck chains). None: this
    /// challenger cannot.
    fn track_state(&mut self) -> Option<GrindAhead<F>> {
        None
    }

    /// [`track_state`](Self::track_state) through a whole opening (round heads and the final
    /// grind read it between rounds).
    fn track_state_throughout(&mut self) -> Option<GrindAhead<F>> {
        None
    }

    /// Grinds of `bits` played ahead from the published state, each taken by the grind whose
    /// state it searched. None: this challenger cannot.
    fn grind_ahead(&mut self, bits: usize) -> Option<GrindAhead<F>> {
        let _ = bits;
        None
    }

    /// Ends [`grind_ahead`](Self::grind_ahead) (and tracking begun with it).
    fn stop_grinding_ahead(&mut self) {}

    /// Ends [`track_state_throughout`](Self::track_state_throughout).
    fn stop_tracking(&mut self) {}

    /// The least difficulty played ahead on the device (below it the challenger grinds itself).
    fn device_min_bits(&self) -> usize {
        usize::MAX
    }

    /// The time this challenger has spent grinding, where it keeps one (for the per-step
    /// breakdown).
    fn pow_clock(&self) -> Option<PowClock> {
        None
    }
}

/// The fast transcript: grinds on the GPU, and offers every kind of speculation.
impl<F: ProverField> WhirChallenger<F> for GpuChallenger<F>
where
    GpuChallenger<F>: FieldChallenger<F> + GrindingChallenger<Witness = F> + CanSampleUniformBits<F> + CanObserve<Commitment<F>>,
    InnerChallenger<F>: FieldChallenger<F> + GrindingChallenger<Witness = F>,
{
    /// Plonky3's challenger inside (the GPU one's clones share its speculation).
    type Trial = InnerChallenger<F>;

    fn trial(&self) -> InnerChallenger<F> {
        self.inner().clone()
    }
    fn track_state(&mut self) -> Option<GrindAhead<F>> {
        GpuChallenger::track_state(self)
    }
    fn track_state_throughout(&mut self) -> Option<GrindAhead<F>> {
        GpuChallenger::track_state_throughout(self)
    }
    fn grind_ahead(&mut self, bits: usize) -> Option<GrindAhead<F>> {
        GpuChallenger::grind_ahead(self, bits)
    }
    fn stop_grinding_ahead(&mut self) {
        GpuChallenger::stop_grinding_ahead(self)
    }
    fn stop_tracking(&mut self) {
        GpuChallenger::stop_tracking(self)
    }
    fn device_min_bits(&self) -> usize {
        GpuChallenger::gpu_min_bits(self)
    }
    fn pow_clock(&self) -> Option<PowClock> {
        Some(GpuChallenger::pow_clock(self))
    }
}

/// Plonky3's own challenger (`DuplexChallenger<F, Poseidon2, 16, 8>`, as p3-whir's tests and a
/// Plonky3 stack hold it): every step played on the host. Its grinder searches in parallel and
/// returns any passing witness, so its proofs' PoW witnesses (and with them everything after)
/// can differ from run to run, with Plonky3's `WhirProver` as with this crate's PCS.
impl<F: ProverField, P> WhirChallenger<F> for DuplexChallenger<F, P, 16, 8>
where
    P: CryptographicPermutation<[F; 16]> + CryptographicPermutation<[<F as Field>::Packing; 16]> + Clone,
    DuplexChallenger<F, P, 16, 8>: FieldChallenger<F> + GrindingChallenger<Witness = F> + CanSampleUniformBits<F> + CanObserve<Commitment<F>>,
{
    type Trial = Self;

    fn trial(&self) -> Self {
        self.clone()
    }
}
