//! The GPU encoder seen as p3-whir's `WhirDomain`: identical codewords, query points and
//! protocol id to Plonky3's DFT domain, for base and extension rows.

mod common;

use std::sync::Arc;

use p3_baby_bear::BabyBear;
use p3_commit::Encoder;
use p3_dft::Radix2DFTSmallBatch;
use p3_field::extension::BinomialExtensionField;
use p3_field::PrimeCharacteristicRing;
use p3_matrix::dense::RowMajorMatrix;
use p3_whir::WhirDomain;
use rand::RngExt;
use whir_wgpu::gpu::{GpuDft, GpuNtt};
use whir_wgpu::prover::GpuWhirDomain;

type Ext = BinomialExtensionField<BabyBear, 4>;

#[test]
fn gpu_domain_matches_plonky3_domain() {
    let mut rng = common::rng();
    let cpu = Radix2DFTSmallBatch::<BabyBear>::default();
    for ctx in common::contexts() {
        let ntt = Arc::new(GpuNtt::new(ctx));
        ntt.set_poison_outputs(true);
        let gpu = GpuWhirDomain::new(GpuDft::new(Some(ntt)).with_cpu_threshold(0).encoder());
        for (log_msg, fold, rate) in [(0, 0, 1), (4, 1, 1), (6, 2, 2), (8, 4, 1), (10, 3, 3), (12, 1, 2)] {
            let width = 1 << fold;
            let rows = 1usize << log_msg;
            // Extension rows, padded as the prover pads them.
            let mut ext: Vec<Ext> = (0..rows * width).map(|_| rng.random()).collect();
            ext.resize((rows << rate) * width, Ext::ZERO);
            let m = RowMajorMatrix::new(ext, width);
            let want = <Radix2DFTSmallBatch<BabyBear> as WhirDomain<BabyBear, Ext>>::encode_extension_batch_padded(&cpu, m.clone(), rate);
            let got = <GpuWhirDomain as WhirDomain<BabyBear, Ext>>::encode_extension_batch_padded(&gpu, m, rate);
            assert_eq!(got, want, "extension rows 2^{log_msg} x {width} rate {rate}");

            let mut base = common::random_vec(&mut rng, rows * width);
            base.resize((rows << rate) * width, BabyBear::ZERO);
            let m = RowMajorMatrix::new(base, width);
            assert_eq!(gpu.encode_batch_padded(m.clone(), rate), cpu.encode_batch_padded(m, rate), "base rows 2^{log_msg} x {width} rate {rate}");

            let log_domain = log_msg + fold + rate;
            for index in [0, 1, (1 << log_domain) - 1] {
                assert_eq!(
                    <GpuWhirDomain as WhirDomain<BabyBear, Ext>>::query_point(&gpu, log_domain, log_msg + fold, index),
                    <Radix2DFTSmallBatch<BabyBear> as WhirDomain<BabyBear, Ext>>::query_point(&cpu, log_domain, log_msg + fold, index),
                );
            }
        }
        assert_eq!(<GpuWhirDomain as WhirDomain<BabyBear, Ext>>::protocol_id(&gpu), b"");
    }
}
