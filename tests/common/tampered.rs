//! Test backends made wrong on purpose.

use p3_field::PrimeCharacteristicRing;
use whir_wgpu::prover::backend::GpuBackend;
use whir_wgpu::prover::backend::{Backend, HidingRoundHead, OpenedRows, PlayedHead, RoundHead};
use whir_wgpu::prover::{Commitment, ProverError, EF, F};
use whir_wgpu::verifier::hash::{CpuMmcs, LeafSponge};

/// The GPU's steps with their played-ahead heads tampered with: each out-of-domain point a head
/// played (a plain round's or a hiding round's) moved by one.
pub struct MovedHeadPoints(pub GpuBackend<F>);

impl MovedHeadPoints {
    fn moved(played: Option<PlayedHead<F, EF>>) -> Option<PlayedHead<F, EF>> {
        played.map(|mut p| {
            p.points.iter_mut().for_each(|z| *z += EF::ONE);
            p
        })
    }
}

impl Backend<F, EF> for MovedHeadPoints {
    type Committed = <GpuBackend<F> as Backend<F, EF>>::Committed;
    type Opening = <GpuBackend<F> as Backend<F, EF>>::Opening;
    type Sumcheck = <GpuBackend<F> as Backend<F, EF>>::Sumcheck;
    type Transcript = <GpuBackend<F> as Backend<F, EF>>::Transcript;
    type Mmcs = CpuMmcs<F>;

    fn leaf_sponge(&self) -> Option<LeafSponge> {
        Backend::<F, EF>::leaf_sponge(&self.0)
    }
    fn mmcs(&self) -> CpuMmcs<F> {
        Backend::<F, EF>::mmcs(&self.0)
    }
    fn commit(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<(Commitment, Self::Committed), ProverError> {
        Backend::<F, EF>::commit(&self.0, message, width, log_inv_rate)
    }
    fn open(&self, committed: &Self::Committed, indices: &[usize]) -> Result<Self::Opening, ProverError> {
        Backend::<F, EF>::open(&self.0, committed, indices)
    }
    fn read_openings(&self, openings: Vec<Self::Opening>) -> Result<Vec<OpenedRows>, ProverError> {
        Backend::<F, EF>::read_openings(&self.0, openings)
    }
    fn commit_message(&self, message: &[F], width: usize, log_inv_rate: usize) -> Result<(Commitment, Self::Committed, Self::Sumcheck), ProverError> {
        self.0.commit_message(message, width, log_inv_rate)
    }
    fn commit_folded(&self, sumcheck: &mut Self::Sumcheck, fold: usize, log_inv_rate: usize) -> Result<(Commitment, Self::Committed), ProverError> {
        self.0.commit_folded(sumcheck, fold, log_inv_rate)
    }
    fn commit_folded_with_head(
        &self,
        sumcheck: &mut Self::Sumcheck,
        fold: usize,
        log_inv_rate: usize,
        head: Option<&RoundHead<F>>,
    ) -> Result<(Commitment, Self::Committed, Option<PlayedHead<F, EF>>), ProverError> {
        let (root, committed, played) = self.0.commit_folded_with_head(sumcheck, fold, log_inv_rate, head)?;
        Ok((root, committed, Self::moved(played)))
    }
    fn commit_hiding_message(
        &self,
        poly: &[F],
        randomness: &[F],
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<(Commitment, Self::Committed, Self::Sumcheck), ProverError> {
        self.0.commit_hiding_message(poly, randomness, fold, log_inv_rate)
    }
    fn commit_hiding_folded(
        &self,
        sumcheck: &mut Self::Sumcheck,
        randomness: &[EF],
        fold: usize,
        log_inv_rate: usize,
    ) -> Result<(Commitment, Self::Committed), ProverError> {
        self.0.commit_hiding_folded(sumcheck, randomness, fold, log_inv_rate)
    }
    fn commit_hiding_folded_with_head(
        &self,
        sumcheck: &mut Self::Sumcheck,
        randomness: &[EF],
        fold: usize,
        log_inv_rate: usize,
        head: Option<HidingRoundHead<'_, F, EF>>,
    ) -> Result<(Commitment, Self::Committed, Option<PlayedHead<F, EF>>), ProverError> {
        let (root, committed, played) = self.0.commit_hiding_folded_with_head(sumcheck, randomness, fold, log_inv_rate, head)?;
        Ok((root, committed, Self::moved(played)))
    }
}
