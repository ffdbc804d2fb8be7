//! Phase timing: wrappers that time the code (encode), the MMCS (Merkle commits and openings)
//! and proof-of-work grinding inside an unmodified prover run; the rest of the opening phase is
//! sumcheck and transcript work.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use p3_commit::{BatchOpening, BatchOpeningRef, Encoder, Mmcs};
use p3_matrix::dense::RowMajorMatrix;
use p3_matrix::{Dimensions, Matrix};
use p3_whir::{SecurityAssumption, WhirDomain, WhirQueryPoint};

use p3_field::{ExtensionField, Field, TwoAdicField};

/// Accumulated wall time per phase of one proof.
#[derive(Clone, Debug, Default)]
pub struct PhaseTimes {
    /// Encoding on its own (the pieces path: Plonky3's prover calls the encoder, then the MMCS).
    pub encode: Duration,
    /// Merkle commits and openings through the MMCS (pieces path).
    pub merkle: Duration,
    /// Proof-of-work grinding.
    pub pow: Duration,
    /// Encode + Merkle tree with one wait, with the message upload (resident driver).
    pub commit: Duration,
    /// Row and path openings from resident codewords (resident driver).
    pub open: Duration,
    /// Resident driver, informational (inside "sumcheck + other"): claim phase and initial fold;
    /// the rounds' weights and sumcheck; OOD answers.
    pub claims: Duration,
    /// The rounds' weights and sumchecks (resident driver, informational).
    pub sumcheck: Duration,
    /// Out-of-domain answers (resident driver, informational).
    pub ood: Duration,
}

impl PhaseTimes {
    /// Everything spent on codewords: encoding, trees, openings.
    pub fn codewords(&self) -> Duration {
        self.encode + self.merkle + self.commit + self.open
    }
}

/// Shared accumulator the wrappers add to.
#[derive(Clone, Default)]
pub struct PhaseClock(Arc<Mutex<PhaseTimes>>);

impl PhaseClock {
    /// The times added so far.
    pub fn times(&self) -> PhaseTimes {
        self.0.lock().expect("phase clock poisoned").clone()
    }

    pub(crate) fn time<T>(&self, phase: fn(&mut PhaseTimes) -> &mut Duration, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        *phase(&mut self.0.lock().expect("phase clock poisoned")) += start.elapsed();
        out
    }
}

/// A `WhirDomain` whose encodes are timed.
#[derive(Clone)]
pub struct TimedDomain<D> {
    /// The domain timed.
    pub inner: D,
    /// Where its encodes' time goes.
    pub clock: PhaseClock,
}

impl<F: Field, D: Encoder<F>> Encoder<F> for TimedDomain<D> {
    fn encode_batch(&self, message: RowMajorMatrix<F>, log_inv_rate: usize) -> RowMajorMatrix<F> {
        self.clock.time(|t| &mut t.encode, || self.inner.encode_batch(message, log_inv_rate))
    }
    fn encode_batch_padded(&self, message: RowMajorMatrix<F>, log_inv_rate: usize) -> RowMajorMatrix<F> {
        self.clock.time(|t| &mut t.encode, || self.inner.encode_batch_padded(message, log_inv_rate))
    }
}

impl<F: TwoAdicField, EF: ExtensionField<F> + TwoAdicField, D: WhirDomain<F, EF>> WhirDomain<F, EF> for TimedDomain<D> {
    fn protocol_id(&self) -> &'static [u8] {
        self.inner.protocol_id()
    }
    fn supports_security_assumption(&self, assumption: SecurityAssumption) -> bool {
        self.inner.supports_security_assumption(assumption)
    }
    fn stratified_queries(&self) -> bool {
        self.inner.stratified_queries()
    }
    fn max_log_domain_size(&self) -> usize {
        self.inner.max_log_domain_size()
    }
    fn encode_extension_batch_padded(&self, message: RowMajorMatrix<EF>, log_inv_rate: usize) -> RowMajorMatrix<EF> {
        self.clock.time(|t| &mut t.encode, || self.inner.encode_extension_batch_padded(message, log_inv_rate))
    }
    fn query_point(&self, log_domain_size: usize, num_variables: usize, index: usize) -> WhirQueryPoint<F> {
        self.inner.query_point(log_domain_size, num_variables, index)
    }
}

/// An `Mmcs` whose commits and openings are timed.
#[derive(Clone)]
pub struct TimedMmcs<M> {
    /// The MMCS timed.
    pub inner: M,
    /// Where its commits' and openings' time goes.
    pub clock: PhaseClock,
}

impl<F: Field, M: Mmcs<F>> Mmcs<F> for TimedMmcs<M> {
    type ProverData<X> = M::ProverData<X>;
    type Commitment = M::Commitment;
    type Proof = M::Proof;
    type MultiProof = M::MultiProof;
    type Error = M::Error;

    fn commit<X: Matrix<F>>(&self, inputs: Vec<X>) -> (Self::Commitment, Self::ProverData<X>) {
        self.clock.time(|t| &mut t.merkle, || self.inner.commit(inputs))
    }
    fn open_batch<X: Matrix<F>>(&self, index: usize, prover_data: &Self::ProverData<X>) -> BatchOpening<F, Self> {
        let (values, proof) = self.clock.time(|t| &mut t.merkle, || self.inner.open_batch(index, prover_data)).unpack();
        BatchOpening::new(values, proof)
    }
    fn get_matrices<'a, X: Matrix<F>>(&self, prover_data: &'a Self::ProverData<X>) -> Vec<&'a X> {
        self.inner.get_matrices(prover_data)
    }
    fn verify_batch(
        &self,
        commit: &Self::Commitment,
        dimensions: &[Dimensions],
        index: usize,
        batch_opening: BatchOpeningRef<'_, F, Self>,
    ) -> Result<(), Self::Error> {
        self.inner.verify_batch(commit, dimensions, index, BatchOpeningRef::new(batch_opening.opened_values, batch_opening.opening_proof))
    }
    fn open_multi_batch<X: Matrix<F>>(&self, indices: &[usize], prover_data: &Self::ProverData<X>) -> (Vec<Vec<Vec<F>>>, Self::MultiProof) {
        self.clock.time(|t| &mut t.merkle, || self.inner.open_multi_batch(indices, prover_data))
    }
    fn verify_multi_batch<R: AsRef<[F]> + PartialEq>(
        &self,
        commit: &Self::Commitment,
        dimensions: &[Dimensions],
        indices: &[usize],
        opened_values: &[Vec<R>],
        proof: &Self::MultiProof,
    ) -> Result<(), Self::Error> {
        self.inner.verify_multi_batch(commit, dimensions, indices, opened_values, proof)
    }
}
