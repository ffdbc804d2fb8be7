//! The GPU encoder as p3-whir's code/domain: same code, same query points and the same
//! (empty) protocol id as Plonky3's two-adic DFT domain, so proofs are identical and the stock
//! verifier accepts them.

use p3_baby_bear::BabyBear;
use p3_commit::Encoder;
use p3_field::{ExtensionField, PrimeCharacteristicRing, TwoAdicField};
use p3_matrix::dense::RowMajorMatrix;
use p3_matrix::Matrix;
use p3_whir::{SecurityAssumption, WhirDomain, WhirQueryPoint};
use whir_gpu::GpuEncoder;

/// `WhirDomain<BabyBear, EF>` backed by [`GpuEncoder`]; extension-field rows are encoded as
/// `DIMENSION·width` base columns in one GPU transform.
#[derive(Clone, Default)]
pub struct GpuWhirDomain {
    pub encoder: GpuEncoder,
}

impl GpuWhirDomain {
    pub fn new(encoder: GpuEncoder) -> Self {
        Self { encoder }
    }
}

impl Encoder<BabyBear> for GpuWhirDomain {
    fn encode_batch(&self, message: RowMajorMatrix<BabyBear>, log_inv_rate: usize) -> RowMajorMatrix<BabyBear> {
        self.encoder.encode_batch(message, log_inv_rate)
    }

    fn encode_batch_padded(&self, message: RowMajorMatrix<BabyBear>, log_inv_rate: usize) -> RowMajorMatrix<BabyBear> {
        self.encoder.encode_batch_padded(message, log_inv_rate)
    }
}

impl<EF> WhirDomain<BabyBear, EF> for GpuWhirDomain
where
    EF: ExtensionField<BabyBear> + TwoAdicField,
{
    fn protocol_id(&self) -> &'static [u8] {
        b""
    }

    fn supports_security_assumption(&self, _assumption: SecurityAssumption) -> bool {
        true
    }

    fn max_log_domain_size(&self) -> usize {
        BabyBear::TWO_ADICITY
    }

    fn encode_extension_batch_padded(&self, message: RowMajorMatrix<EF>, log_inv_rate: usize) -> RowMajorMatrix<EF> {
        let width = message.width();
        let base = RowMajorMatrix::new(EF::flatten_to_base(message.values), width * EF::DIMENSION);
        let encoded = self.encoder.encode_batch_padded(base, log_inv_rate);
        RowMajorMatrix::new(EF::reconstitute_from_base(encoded.values), width)
    }

    fn query_point(&self, log_domain_size: usize, _num_variables: usize, index: usize) -> WhirQueryPoint<BabyBear> {
        WhirQueryPoint::Univariate(BabyBear::two_adic_generator(log_domain_size).exp_u64(index as u64))
    }
}
