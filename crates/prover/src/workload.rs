//! The PCS's multi-table workloads ([`Workload`], from the verifier crate, which rebuilds their
//! opening protocol from a proof file) and their random tables.

use p3_matrix::dense::RowMajorMatrix;
use p3_sumcheck::layout::Table;
use rand::{Rng, RngExt};

use crate::F;
pub use whir_verifier::{Workload, ZKVM_PRESET, ZKVM_SMALL_PRESET};

/// Tables of random values for `workload` (p3-sumcheck's tables: one row per column).
pub fn random_tables<R: Rng>(workload: &Workload, rng: &mut R) -> Vec<Table<F>> {
    workload.tables.iter().map(|&(v, w)| Table::new(RowMajorMatrix::new((0..w << v).map(|_| rng.random()).collect(), 1 << v))).collect()
}
