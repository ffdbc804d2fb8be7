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
use whir_gpu::GpuField;

/// `WhirDomain<F, EF>` backed by [`GpuEncoder`]; extension-field rows are encoded as
/// `DIMENSION·width` base columns in one GPU transform.
#[derive(Clone)]
pub struct GpuWhirDomain<F: GpuField = BabyBear> {
    /// The GPU encoder it encodes with.
    pub encoder: GpuEncoder<F>,
}

impl<F: GpuField> Default for GpuWhirDomain<F> {
    fn default() -> Self {
        Self { encoder: GpuEncoder::default() }
    }
}

impl<F: GpuField> GpuWhirDomain<F> {
    /// The domain encoding with `encoder`.
    pub fn new(encoder: GpuEncoder<F>) -> Self {
        Self { encoder }
    }
}

// One impl of each per field: p3-commit's blanket `Encoder` and p3-whir's blanket `WhirDomain`
// over every DFT rule out generic ones.
macro_rules! impl_domain {
    ($($field:ty),*) => {$(
        impl Encoder<$field> for GpuWhirDomain<$field> {
            fn encode_batch(&self, message: RowMajorMatrix<$field>, log_inv_rate: usize) -> RowMajorMatrix<$field> {
                self.encoder.encode_batch(message, log_inv_rate)
            }

            fn encode_batch_padded(&self, message: RowMajorMatrix<$field>, log_inv_rate: usize) -> RowMajorMatrix<$field> {
                self.encoder.encode_batch_padded(message, log_inv_rate)
            }
        }

        impl<EF> WhirDomain<$field, EF> for GpuWhirDomain<$field>
        where
            EF: ExtensionField<$field> + TwoAdicField,
        {
            fn protocol_id(&self) -> &'static [u8] {
                b""
            }

            fn supports_security_assumption(&self, _assumption: SecurityAssumption) -> bool {
                true
            }

            fn max_log_domain_size(&self) -> usize {
                <$field as TwoAdicField>::TWO_ADICITY
            }

            fn encode_extension_batch_padded(&self, message: RowMajorMatrix<EF>, log_inv_rate: usize) -> RowMajorMatrix<EF> {
                let width = message.width();
                let base = RowMajorMatrix::new(EF::flatten_to_base(message.values), width * EF::DIMENSION);
                let encoded = self.encoder.encode_batch_padded(base, log_inv_rate);
                RowMajorMatrix::new(EF::reconstitute_from_base(encoded.values), width)
            }

            fn query_point(&self, log_domain_size: usize, _num_variables: usize, index: usize) -> WhirQueryPoint<$field> {
                WhirQueryPoint::Univariate(<$field as TwoAdicField>::two_adic_generator(log_domain_size).exp_u64(index as u64))
            }
        }
    )*};
}
impl_domain!(BabyBear, p3_koala_bear::KoalaBear);
