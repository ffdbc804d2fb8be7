//! The PCS's multi-table workloads ([`Workload`], from the verifier crate, which rebuilds their
//! opening protocol from a proof file) and their random tables.

use p3_field::Field;
use p3_matrix::dense::RowMajorMatrix;
use p3_sumcheck::layout::Table;
use rand::distr::{Distribution, StandardUniform};
use rand::{Rng, RngExt};
pub use whir_verifier::{Workload, ZKVM_PRESET, ZKVM_SMALL_PRESET};

/// Tables of random values of `F` for `workload` (p3-sumcheck's tables: one row per column).
pub fn random_tables<F: Field, R: Rng>(workload: &Workload, rng: &mut R) -> Vec<Table<F>>
where
    StandardUniform: Distribution<F>,
{
    workload.tables.iter().map(|&(v, w)| Table::new(RowMajorMatrix::new((0..w << v).map(|_| rng.random()).collect(), 1 << v))).collect()
}
