//! Every WGSL field routine against Plonky3, over BabyBear and KoalaBear and their extensions of
//! degree 4, 5 (BabyBear's binomial, KoalaBear's trinomial) and 8, on both multiply variants, with edge values.

#[path = "../../../tests/common/gpu.rs"]
mod common;

use p3_baby_bear::BabyBear;
use p3_field::extension::{BinomialExtensionField, QuinticTrinomialExtensionField};
use p3_field::{ExtensionField, PrimeCharacteristicRing};
use p3_koala_bear::KoalaBear;
use rand::distr::{Distribution, StandardUniform};
use rand::RngExt;
use whir_gpu::field::{as_words, words_to};
use whir_gpu::testing::{run_field_op_in, FieldOp};
use whir_gpu::{GpuContext, GpuField};

fn base_operands<F: GpuField>(rng: &mut rand::rngs::StdRng) -> (Vec<F>, Vec<F>)
where
    StandardUniform: Distribution<F>,
{
    let edges = [F::ZERO, F::ONE, F::NEG_ONE, F::TWO, -F::TWO];
    let mut a = Vec::new();
    let mut b = Vec::new();
    for x in edges {
        for y in edges {
            a.push(x);
            b.push(y);
        }
    }
    a.extend((0..4000).map(|_| rng.random::<F>()));
    b.extend((0..4000).map(|_| rng.random::<F>()));
    (a, b)
}

fn base_ops_match<F: GpuField>(ctx: &GpuContext, rng: &mut rand::rngs::StdRng)
where
    StandardUniform: Distribution<F>,
{
    let (a, b) = base_operands::<F>(rng);
    let run = |op, exponent| words_to::<F>(run_field_op_in(ctx, F::ID, op, as_words(&a), as_words(&b), exponent).unwrap()).unwrap();
    let what = format!("{} {:?}", F::ID.name(), ctx.mul_variant());
    let zip = |f: fn(F, F) -> F| a.iter().zip(&b).map(|(&x, &y)| f(x, y)).collect::<Vec<_>>();
    let map = |f: &dyn Fn(F) -> F| a.iter().map(|&x| f(x)).collect::<Vec<_>>();
    assert_eq!(run(FieldOp::Add, 0), zip(|x, y| x + y), "add {what}");
    assert_eq!(run(FieldOp::Sub, 0), zip(|x, y| x - y), "sub {what}");
    assert_eq!(run(FieldOp::Mul, 0), zip(|x, y| x * y), "mul {what}");
    assert_eq!(run(FieldOp::Neg, 0), map(&|x| -x), "neg {what}");
    assert_eq!(run(FieldOp::Square, 0), map(&|x| x.square()), "square {what}");
    for e in [0u32, 1, 2, 3, 7, F::ORDER_U32 - 1, rng.random::<u32>()] {
        assert_eq!(run(FieldOp::Pow, e), map(&|x| x.exp_u64(e as u64)), "pow {e} {what}");
    }
    let inv = run(FieldOp::Inverse, 0);
    for (x, got) in a.iter().zip(inv) {
        assert_eq!(got, x.try_inverse().unwrap_or(F::ZERO), "inverse of {x} {what}");
    }
}

#[test]
fn base_field_ops_match_plonky3() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        base_ops_match::<BabyBear>(&ctx, &mut rng);
        base_ops_match::<KoalaBear>(&ctx, &mut rng);
    }
}

/// The WGSL routines of one extension: its add, sub, mul, neg, square and inverse op codes.
struct ExtOps {
    name: &'static str,
    ops: [FieldOp; 6],
}

const EXT4: ExtOps =
    ExtOps { name: "^4", ops: [FieldOp::Ext4Add, FieldOp::Ext4Sub, FieldOp::Ext4Mul, FieldOp::Ext4Neg, FieldOp::Ext4Square, FieldOp::Ext4Inverse] };
const EXT5: ExtOps =
    ExtOps { name: "^5", ops: [FieldOp::Ext5Add, FieldOp::Ext5Sub, FieldOp::Ext5Mul, FieldOp::Ext5Neg, FieldOp::Ext5Square, FieldOp::Ext5Inverse] };
const EXT8: ExtOps =
    ExtOps { name: "^8", ops: [FieldOp::Ext8Add, FieldOp::Ext8Sub, FieldOp::Ext8Mul, FieldOp::Ext8Neg, FieldOp::Ext8Square, FieldOp::Ext8Inverse] };

/// Every routine of `ext` over `E` (an extension of F of the degree `ext` works in) against
/// Plonky3's, on edge values and fresh random ones.
fn ext_ops_match<F: GpuField, E: ExtensionField<F>>(ctx: &GpuContext, rng: &mut rand::rngs::StdRng, ext: &ExtOps)
where
    StandardUniform: Distribution<E>,
{
    let degree = E::DIMENSION;
    let words = |v: &[E]| -> Vec<u32> { v.iter().flat_map(|e| as_words::<F>(e.as_basis_coefficients_slice()).to_vec()).collect() };
    let from = |w: Vec<u32>| -> Vec<E> { words_to::<F>(w).unwrap().chunks(degree).map(|c| E::from_basis_coefficients_slice(c).unwrap()).collect() };
    let mut a: Vec<E> = vec![E::ZERO, E::ONE, E::NEG_ONE, E::from(F::NEG_ONE), E::GENERATOR];
    let mut b: Vec<E> = vec![E::ONE, E::ZERO, E::NEG_ONE, E::TWO, E::GENERATOR];
    a.extend((0..1500).map(|_| rng.random::<E>()));
    b.extend((0..1500).map(|_| rng.random::<E>()));
    let (wa, wb) = (words(&a), words(&b));
    let run = |op| from(run_field_op_in(ctx, F::ID, op, &wa, &wb, 0).unwrap());
    let what = format!("{}{} {:?}", F::ID.name(), ext.name, ctx.mul_variant());
    let [add, sub, mul, neg, square, inverse] = ext.ops;
    let zip = |f: fn(E, E) -> E| a.iter().zip(&b).map(|(&x, &y)| f(x, y)).collect::<Vec<_>>();
    assert_eq!(run(add), zip(|x, y| x + y), "add {what}");
    assert_eq!(run(sub), zip(|x, y| x - y), "sub {what}");
    assert_eq!(run(mul), zip(|x, y| x * y), "mul {what}");
    assert_eq!(run(neg), a.iter().map(|&x| -x).collect::<Vec<_>>(), "neg {what}");
    assert_eq!(run(square), a.iter().map(|&x| x.square()).collect::<Vec<_>>(), "square {what}");
    for (x, got) in a.iter().zip(run(inverse)) {
        assert_eq!(got, x.try_inverse().unwrap_or(E::ZERO), "inverse of {x} {what}");
    }
}

#[test]
fn extension_field_ops_match_plonky3() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        ext_ops_match::<BabyBear, BinomialExtensionField<BabyBear, 4>>(&ctx, &mut rng, &EXT4);
        ext_ops_match::<KoalaBear, BinomialExtensionField<KoalaBear, 4>>(&ctx, &mut rng, &EXT4);
    }
}

/// The degree-5 extensions: BabyBear's binomial X^5 - 2 and KoalaBear's trinomial X^5 + X^2 - 1.
#[test]
fn degree_5_extension_ops_match_plonky3() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        ext_ops_match::<BabyBear, BinomialExtensionField<BabyBear, 5>>(&ctx, &mut rng, &EXT5);
        ext_ops_match::<KoalaBear, QuinticTrinomialExtensionField<KoalaBear>>(&ctx, &mut rng, &EXT5);
    }
}

/// The degree-8 binomial extensions (BabyBear^8, X^8 - 11; KoalaBear^8, X^8 - 3): the 128-bit
/// configurations' challenge fields.
#[test]
fn degree_8_extension_ops_match_plonky3() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        ext_ops_match::<BabyBear, BinomialExtensionField<BabyBear, 8>>(&ctx, &mut rng, &EXT8);
        ext_ops_match::<KoalaBear, BinomialExtensionField<KoalaBear, 8>>(&ctx, &mut rng, &EXT8);
    }
}

#[test]
fn montgomery_words_are_plonky3s() {
    assert_eq!(as_words(&[BabyBear::ONE])[0], 0x0fff_fffe);
    assert_eq!(as_words(&[KoalaBear::ONE])[0], 0x01ff_fffe);
    assert!(words_to::<BabyBear>(vec![0x7800_0001]).is_err(), "p itself is not a canonical word");
    assert!(words_to::<KoalaBear>(vec![0x7f00_0001]).is_err(), "p itself is not a canonical word");
    // A word valid in BabyBear is not one in KoalaBear: each field checks its own prime.
    assert!(words_to::<BabyBear>(vec![0x7700_0000]).is_ok() && words_to::<KoalaBear>(vec![0x7700_0000]).is_ok());
    assert!(words_to::<BabyBear>(vec![0x7e00_0000]).is_err() && words_to::<KoalaBear>(vec![0x7e00_0000]).is_ok());
}
