//! The challengers the WHIR protocol runs over, and what each can play ahead of the transcript.
//!
//! The protocol (the driver, the PCS) takes any challenger p3-whir's `WhirProver` takes: a
//! [`WhirChallenger`]. Speculation — sumcheck rounds chained where the tables lie, each round's
//! head (commitment, out-of-domain answers, query grind) and grinds played ahead on the device
//! from a published transcript state — is offered through the trait's methods, which by default
//! offer nothing: a challenger that cannot speculate (Plonky3's own `DuplexChallenger`) has the
//! protocol play every step on the host. The protocol checks every value played ahead against
//! the transcript it replays.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use p3_challenger::{CanObserve, CanSampleUniformBits, DuplexChallenger, FieldChallenger, GrindingChallenger};
use p3_field::Field;
use p3_symmetric::CryptographicPermutation;

use crate::{Commitment, ProverField};

/// Width of the duplex sponge the transcript runs on (Poseidon2 of width 16, rate 8).
pub const SPONGE_WIDTH: usize = 16;

/// What a challenger that plays ahead shares with the backend that plays with it: the
/// transcript's state as it last published it, and a queue for grinds played ahead.
/// Implemented by the backend's own challenger (the GPU's in `backend/gpu.rs`).
pub trait LookaheadLink<F: ProverField>: Send + Sync {
    /// The transcript's state as last published, where the challenger publishes it now.
    fn state(&self) -> Option<TranscriptState<F>>;

    /// Hands grinds played ahead to the challenger, in the order its grinds come: it takes
    /// each only where its own state is the one searched, and checks the witness.
    fn queue(&self, grinds: Vec<PlayedGrind<F>>);

    /// The link itself, for the backend that made it to read its own type back.
    fn as_any(&self) -> &dyn Any;
}

/// A link from a challenger that plays ahead to the backend that plays with it (see
/// [`LookaheadLink`]). Made by the challenger ([`WhirChallenger::track_state`],
/// [`WhirChallenger::grind_ahead`]); a backend that cannot play ahead never sees one.
#[derive(Clone)]
pub struct Lookahead<F: ProverField>(Arc<dyn LookaheadLink<F>>);

impl<F: ProverField> Lookahead<F> {
    /// A link over `link`.
    pub fn new(link: impl LookaheadLink<F> + 'static) -> Self {
        Self(Arc::new(link))
    }

    /// The transcript's state as last published, where the challenger publishes it now.
    pub fn state(&self) -> Option<TranscriptState<F>> {
        self.0.state()
    }

    /// Hands grinds played ahead to the challenger (see [`LookaheadLink::queue`]).
    pub fn queue(&self, grinds: impl IntoIterator<Item = PlayedGrind<F>>) {
        self.0.queue(grinds.into_iter().collect())
    }

    /// The link, for the backend that made it.
    pub fn link(&self) -> &dyn LookaheadLink<F> {
        self.0.as_ref()
    }
}

/// The transcript at one point, as a backend that plays ahead starts from it: the duplex sponge's
/// state and its pending inputs, and the device the challenger grinds on (opaque here: the
/// backend that plays ahead reads its own type back, e.g. the GPU's grinder).
#[derive(Clone)]
pub struct TranscriptState<F: ProverField> {
    pub(crate) device: Arc<dyn Any + Send + Sync>,
    /// The sponge's state.
    pub sponge: [F; SPONGE_WIDTH],
    /// Inputs observed since the last permutation.
    pub pending: Vec<F>,
}

impl<F: ProverField> TranscriptState<F> {
    /// The transcript at `sponge` with `pending` inputs, played ahead on `device` (how a
    /// challenger publishes it; for tests of backends that play ahead).
    pub fn new(device: Arc<dyn Any + Send + Sync>, sponge: [F; SPONGE_WIDTH], pending: Vec<F>) -> Self {
        Self { device, sponge, pending }
    }

    /// The device the challenger grinds on.
    pub fn device(&self) -> &Arc<dyn Any + Send + Sync> {
        &self.device
    }
}

/// A grind played ahead of the transcript: the state it searched (the sponge with its pending
/// inputs, zero padding and tagged capacity, the witness's slot left 0), its difficulty and the
/// smallest witness found in `0..searched_end`. The backend makes it, the challenger takes it only
/// where its own state is the one searched, and checks the witness.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlayedGrind<F> {
    /// The permutation's input with the witness's slot left 0.
    pub base: [F; SPONGE_WIDTH],
    /// The slot of `base` the witness goes in.
    pub witness_slot: usize,
    /// The difficulty searched at, in bits.
    pub bits: usize,
    /// The smallest passing witness in `0..searched_end`; None if there is none.
    pub witness: Option<F>,
    /// End of the range searched (from 0).
    pub searched_end: u32,
}

/// The transcript steps after a round's commitment, to be played where f lies: the root
/// observed, `samples` out-of-domain points drawn with f evaluated at each, then a grind of
/// `grind_bits` (0: none).
#[derive(Clone)]
pub struct RoundHead<F: ProverField> {
    /// Where the transcript is before the root is observed.
    pub state: TranscriptState<F>,
    /// Out-of-domain samples.
    pub samples: usize,
    /// The query grind's difficulty (0: the challenger grinds itself).
    pub grind_bits: usize,
}

/// A hiding round's head: a [`RoundHead`] whose root is followed by the switch mask's, and
/// whose out-of-domain answers are f's values followed by the switch mask's message, read as
/// one univariate polynomial's coefficients (`Σ_x f_x·ρ^x + ρ^(2^m)·Σ_s mask_s·ρ^s`).
pub struct HidingRoundHead<'a, F: ProverField, E, R = Commitment<F>> {
    /// The steps after the oracle's root, as for a plain round.
    pub head: RoundHead<F>,
    /// The switch mask's message.
    pub mask_message: &'a [E],
    /// The switch mask's root, asked for once the oracle's tree is under way (the mask may be
    /// committed meanwhile elsewhere); None: the head is not played.
    pub mask_root: &'a dyn Fn() -> Option<R>,
}

/// What a [`RoundHead`] played: each point drawn and f's value there, and the grind. The
/// protocol draws the points with its own challenger and checks each before using its value.
#[derive(Clone, Debug)]
pub struct PlayedHead<F, E> {
    /// The out-of-domain points drawn, in order.
    pub points: Vec<E>,
    /// f at each point's expansion.
    pub answers: Vec<E>,
    /// The query grind, where one was played.
    pub grind: Option<PlayedGrind<F>>,
}

/// A sumcheck round played with its transcript where the tables lie.
#[derive(Clone, Debug)]
pub struct PlayedRound<F, E> {
    /// The round polynomial's h(0).
    pub c0: E,
    /// The round polynomial's leading coefficient h(∞).
    pub c_inf: E,
    /// The challenge drawn, already bound by a fold; None where the round's grind found no
    /// witness in its range: the chain stopped there, before the round's fold.
    pub r: Option<E>,
    /// The round's grind (rounds with proof of work).
    pub grind: Option<PlayedGrind<F>>,
}

/// What each round of a masked sumcheck batch observes in place of its pair (h(0), h(∞)): its
/// wire polynomial, the pair moved by the masks' known parts. With s = `scale` (the batch's ε),
/// round j observes `(at_zero_j + s·h(0) + share_j·Σ_{l<j} mask_l(γ_l), at_inf_j + s·h(∞),
/// rest_j...)`, γ_l being round l's challenge, so a backend that chains the rounds where the tables
/// lie can play them ([`SumcheckState::play_chain`](crate::sumcheck::SumcheckState::play_chain)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaskedWires<E> {
    /// The pair's factor.
    pub scale: E,
    /// Each round's terms.
    pub rounds: Vec<MaskedWire<E>>,
}

/// One round's terms in [`MaskedWires`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaskedWire<E> {
    /// Added to the scaled h(0).
    pub at_zero: E,
    /// Added to the scaled h(∞).
    pub at_inf: E,
    /// The factor of the earlier rounds' masks, at their challenges, in the first value.
    pub share: E,
    /// The wire's coefficients after the pair's two.
    pub rest: Vec<E>,
    /// This round's mask, lowest coefficient first.
    pub mask: Vec<E>,
}

/// A duplex sponge's words at one point of a transcript: its state, the inputs observed since
/// its last permutation and the outputs drawn but not yet used. Two challengers over the same
/// sponge with the same words play the same transcript from there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpongeWords<F> {
    /// The sponge's state.
    pub state: [F; SPONGE_WIDTH],
    /// Inputs observed since the last permutation.
    pub inputs: Vec<F>,
    /// Outputs squeezed and not yet sampled.
    pub outputs: Vec<F>,
}

/// A challenger's running grinding time.
#[derive(Clone)]
pub struct GrindClock(Arc<dyn Fn() -> Duration + Send + Sync>);

impl GrindClock {
    /// A clock that reads `elapsed`.
    pub fn new(elapsed: impl Fn() -> Duration + Send + Sync + 'static) -> Self {
        Self(Arc::new(elapsed))
    }

    /// Wall time spent grinding so far.
    pub fn elapsed(&self) -> Duration {
        (self.0)()
    }
}

/// A challenger the protocol runs over: what p3-whir's `WhirProver` accepts (observe and sample
/// field elements, grind, sample bits; observing the backend's commitments, `CanObserve` of
/// its MMCS's, is asked for where the protocol runs), cloned for trial runs, with what it can
/// play ahead of the transcript (nothing, by default).
pub trait WhirChallenger<F: ProverField>: FieldChallenger<F> + GrindingChallenger<Witness = F> + CanSampleUniformBits<F> + Clone {
    /// A copy of the transcript for trial runs (a claim's point read off a run on the copy),
    /// sharing nothing with this challenger's speculation.
    type Trial: FieldChallenger<F> + GrindingChallenger<Witness = F> + Clone;

    /// The transcript as it is now, as a [`Trial`](Self::Trial).
    fn trial(&self) -> Self::Trial;

    /// Publishes the transcript state after every operation until [`stop_tracking`](Self::stop_tracking),
    /// for a backend that plays the transcript where the data lies (sumcheck chains). None: this
    /// challenger cannot.
    fn track_state(&mut self) -> Option<Lookahead<F>> {
        None
    }

    /// [`track_state`](Self::track_state) through a whole opening (round heads and the final
    /// grind read it between rounds).
    fn track_state_throughout(&mut self) -> Option<Lookahead<F>> {
        None
    }

    /// Grinds of `bits` played ahead from the published state, each taken by the grind whose
    /// state it searched. None: this challenger cannot.
    fn grind_ahead(&mut self, bits: usize) -> Option<Lookahead<F>> {
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
    fn pow_clock(&self) -> Option<GrindClock> {
        None
    }

    /// Where this challenger is a duplex sponge of width 16 and rate 8 that grinds and plays
    /// nothing on the device itself (Plonky3's `DuplexChallenger`): its words now, so the
    /// protocol can play the transcript on a challenger of the backend that continues the same
    /// sponge where the data lies, then hand the words back ([`resume`](Self::resume)). None:
    /// the protocol plays over this challenger itself.
    fn sponge_words(&self) -> Option<SpongeWords<F>> {
        None
    }

    /// This challenger's permutation applied to `state`: a handover is made only where it is
    /// the device's (checked on a random state first). None where [`sponge_words`](Self::sponge_words) is.
    fn permute(&self, state: [F; SPONGE_WIDTH]) -> Option<[F; SPONGE_WIDTH]> {
        let _ = state;
        None
    }

    /// Continues from `words`, which another challenger over this sponge reached by playing on
    /// from this one's [`sponge_words`](Self::sponge_words).
    fn resume(&mut self, words: SpongeWords<F>) {
        let _ = words;
    }
}

/// A challenger over a duplex sponge of width 16 and rate 8 that a caller's transcript can be
/// handed to and back ([`Backend::device_transcript`](crate::backend::Backend::device_transcript)):
/// its words now, and its permutation (checked against the caller's on a random state first).
pub trait SpongeTranscript<F: ProverField>: WhirChallenger<F> {
    /// The sponge's words now (what the caller's challenger resumes from).
    fn words(&self) -> SpongeWords<F>;

    /// This challenger's permutation applied to `state`.
    fn permute_state(&self, state: [F; SPONGE_WIDTH]) -> [F; SPONGE_WIDTH];
}

/// Plonky3's own duplex, as the CPU twin's transcript type (it plays nothing ahead).
impl<F: ProverField, P> SpongeTranscript<F> for DuplexChallenger<F, P, 16, 8>
where
    DuplexChallenger<F, P, 16, 8>: WhirChallenger<F>,
    P: CryptographicPermutation<[F; 16]>,
{
    fn words(&self) -> SpongeWords<F> {
        duplex_words(self)
    }
    fn permute_state(&self, state: [F; SPONGE_WIDTH]) -> [F; SPONGE_WIDTH] {
        self.permutation.permute(state)
    }
}

/// A duplex sponge's words now (Plonky3's `DuplexChallenger`, the GPU challenger's inner one too).
pub(crate) fn duplex_words<F: ProverField, P: CryptographicPermutation<[F; 16]>>(duplex: &DuplexChallenger<F, P, 16, 8>) -> SpongeWords<F> {
    SpongeWords { state: duplex.sponge_state, inputs: duplex.input_buffer.clone(), outputs: duplex.output_buffer.clone() }
}

/// The challenger a configuration names (`WhirConfig<E, F, K>`): the run itself may play over
/// another over the same sponge ([`WhirChallenger::sponge_words`]).
pub trait ConfigChallenger<F: ProverField>: FieldChallenger<F> + GrindingChallenger<Witness = F> {}
impl<F: ProverField, K: FieldChallenger<F> + GrindingChallenger<Witness = F>> ConfigChallenger<F> for K {}

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
    fn sponge_words(&self) -> Option<SpongeWords<F>> {
        Some(duplex_words(self))
    }
    fn permute(&self, state: [F; SPONGE_WIDTH]) -> Option<[F; SPONGE_WIDTH]> {
        Some(self.permutation.permute(state))
    }
    fn resume(&mut self, words: SpongeWords<F>) {
        self.sponge_state = words.state;
        self.input_buffer = words.inputs;
        self.output_buffer = words.outputs;
    }
}

/// Plonky3's byte-oriented challenger (`SerializingChallenger32` over a hash challenger, e.g. its
/// Keccak transcript, or over whir-gpu's `GpuKeccakHash`, which grinds on the GPU): every step
/// played on the host, its grinds where its inner challenger runs them.
impl<F: ProverField, Inner> WhirChallenger<F> for p3_challenger::SerializingChallenger32<F, Inner>
where
    p3_challenger::SerializingChallenger32<F, Inner>: FieldChallenger<F> + GrindingChallenger<Witness = F> + CanSampleUniformBits<F> + Clone,
{
    type Trial = Self;

    fn trial(&self) -> Self {
        self.clone()
    }
}

/// The transcript of a backend that continues no caller's sponge on its device (one whose
/// trees hash with Keccak: its transcript is Plonky3's Keccak challenger on the host): no value
/// of it exists, so [`Backend::device_transcript`](crate::backend::Backend::device_transcript)
/// can only return None.
#[derive(Clone, Debug)]
pub enum NoTranscript<F> {
    #[doc(hidden)]
    Never(std::convert::Infallible, std::marker::PhantomData<fn() -> F>),
}

impl<F> NoTranscript<F> {
    fn never(&self) -> ! {
        match *self {
            NoTranscript::Never(never, _) => match never {},
        }
    }
}

impl<F, T> CanObserve<T> for NoTranscript<F> {
    fn observe(&mut self, _: T) {
        self.never()
    }
}
impl<F: ProverField> p3_challenger::CanSample<F> for NoTranscript<F> {
    fn sample(&mut self) -> F {
        self.never()
    }
}
impl<F> p3_challenger::CanSampleBits<usize> for NoTranscript<F> {
    fn sample_bits(&mut self, _: usize) -> usize {
        self.never()
    }
}
impl<F> CanSampleUniformBits<F> for NoTranscript<F> {
    fn sample_uniform_bits<const RESAMPLE: bool>(&mut self, _: usize) -> Result<usize, p3_challenger::ResamplingError> {
        self.never()
    }
}
impl<F: ProverField> FieldChallenger<F> for NoTranscript<F> {}
impl<F: ProverField> GrindingChallenger for NoTranscript<F> {
    type Witness = F;
    fn grind(&mut self, _: usize) -> F {
        self.never()
    }
}
impl<F: ProverField> WhirChallenger<F> for NoTranscript<F> {
    type Trial = Self;
    fn trial(&self) -> Self {
        self.never()
    }
}
impl<F: ProverField> SpongeTranscript<F> for NoTranscript<F> {
    fn words(&self) -> SpongeWords<F> {
        self.never()
    }
    fn permute_state(&self, _: [F; SPONGE_WIDTH]) -> [F; SPONGE_WIDTH] {
        self.never()
    }
}
