//! Every WGSL field routine against Plonky3, over BabyBear and KoalaBear and their extensions of
//! degree 4, 5 (BabyBear's binomial, KoalaBear's trinomial) and 8, on both multiply variants, with edge values.

mod common;

use p3_baby_bear::BabyBear;
use p3_field::extension::{BinomialExtensionField, BinomiallyExtendable};
use p3_field::{BasedVectorSpace, Field, PrimeCharacteristicRing};
use p3_koala_bear::KoalaBear;
use rand::distr::{Distribution, StandardUniform};
use rand::RngExt;
use whir_wgpu::gpu::field::{as_words, words_to};
use whir_wgpu::gpu::testing::{run_field_op_in, FieldOp};
use whir_wgpu::gpu::{GpuContext, GpuField};

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

fn ext_ops_match<F: GpuField + BinomiallyExtendable<4>>(ctx: &GpuContext, rng: &mut rand::rngs::StdRng)
where
    StandardUniform: Distribution<BinomialExtensionField<F, 4>>,
{
    type Ext<F> = BinomialExtensionField<F, 4>;
    let words = |v: &[Ext<F>]| -> Vec<u32> { v.iter().flat_map(|e| as_words::<F>(e.as_basis_coefficients_slice()).to_vec()).collect() };
    let from = |w: Vec<u32>| -> Vec<Ext<F>> { words_to::<F>(w).unwrap().chunks(4).map(|c| Ext::<F>::from_basis_coefficients_slice(c).unwrap()).collect() };
    let mut a: Vec<Ext<F>> = vec![Ext::<F>::ZERO, Ext::<F>::ONE, Ext::<F>::NEG_ONE, Ext::<F>::from(F::NEG_ONE)];
    let mut b: Vec<Ext<F>> = vec![Ext::<F>::ONE, Ext::<F>::ZERO, Ext::<F>::NEG_ONE, Ext::<F>::TWO];
    a.extend((0..2000).map(|_| rng.random::<Ext<F>>()));
    b.extend((0..2000).map(|_| rng.random::<Ext<F>>()));
    let (wa, wb) = (words(&a), words(&b));
    let run = |op| from(run_field_op_in(ctx, F::ID, op, &wa, &wb, 0).unwrap());
    let what = format!("{}^4 {:?}", F::ID.name(), ctx.mul_variant());
    let zip = |f: fn(Ext<F>, Ext<F>) -> Ext<F>| a.iter().zip(&b).map(|(&x, &y)| f(x, y)).collect::<Vec<_>>();
    assert_eq!(run(FieldOp::Ext4Add), zip(|x, y| x + y), "ext add {what}");
    assert_eq!(run(FieldOp::Ext4Sub), zip(|x, y| x - y), "ext sub {what}");
    assert_eq!(run(FieldOp::Ext4Mul), zip(|x, y| x * y), "ext mul {what}");
    assert_eq!(run(FieldOp::Ext4Neg), a.iter().map(|&x| -x).collect::<Vec<_>>(), "ext neg {what}");
    assert_eq!(run(FieldOp::Ext4Square), a.iter().map(|&x| x.square()).collect::<Vec<_>>(), "ext square {what}");
    let inv = run(FieldOp::Ext4Inverse);
    for (x, got) in a.iter().zip(inv) {
        assert_eq!(got, x.try_inverse().unwrap_or(Ext::<F>::ZERO), "ext inverse of {x} {what}");
    }
}

#[test]
fn extension_field_ops_match_plonky3() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        ext_ops_match::<BabyBear>(&ctx, &mut rng);
        ext_ops_match::<KoalaBear>(&ctx, &mut rng);
    }
}

fn ext8_ops_match<F: GpuField + BinomiallyExtendable<8>>(ctx: &GpuContext, rng: &mut rand::rngs::StdRng)
where
    StandardUniform: Distribution<BinomialExtensionField<F, 8>>,
{
    type Ext<F> = BinomialExtensionField<F, 8>;
    let words = |v: &[Ext<F>]| -> Vec<u32> { v.iter().flat_map(|e| as_words::<F>(e.as_basis_coefficients_slice()).to_vec()).collect() };
    let from = |w: Vec<u32>| -> Vec<Ext<F>> { words_to::<F>(w).unwrap().chunks(8).map(|c| Ext::<F>::from_basis_coefficients_slice(c).unwrap()).collect() };
    let mut a: Vec<Ext<F>> = vec![Ext::<F>::ZERO, Ext::<F>::ONE, Ext::<F>::NEG_ONE, Ext::<F>::from(F::NEG_ONE), Ext::<F>::GENERATOR];
    let mut b: Vec<Ext<F>> = vec![Ext::<F>::ONE, Ext::<F>::ZERO, Ext::<F>::NEG_ONE, Ext::<F>::TWO, Ext::<F>::GENERATOR];
    a.extend((0..1500).map(|_| rng.random::<Ext<F>>()));
    b.extend((0..1500).map(|_| rng.random::<Ext<F>>()));
    let (wa, wb) = (words(&a), words(&b));
    let run = |op| from(run_field_op_in(ctx, F::ID, op, &wa, &wb, 0).unwrap());
    let what = format!("{}^8 {:?}", F::ID.name(), ctx.mul_variant());
    let zip = |f: fn(Ext<F>, Ext<F>) -> Ext<F>| a.iter().zip(&b).map(|(&x, &y)| f(x, y)).collect::<Vec<_>>();
    assert_eq!(run(FieldOp::Ext8Add), zip(|x, y| x + y), "ext8 add {what}");
    assert_eq!(run(FieldOp::Ext8Sub), zip(|x, y| x - y), "ext8 sub {what}");
    assert_eq!(run(FieldOp::Ext8Mul), zip(|x, y| x * y), "ext8 mul {what}");
    assert_eq!(run(FieldOp::Ext8Neg), a.iter().map(|&x| -x).collect::<Vec<_>>(), "ext8 neg {what}");
    assert_eq!(run(FieldOp::Ext8Square), a.iter().map(|&x| x.square()).collect::<Vec<_>>(), "ext8 square {what}");
    let inv = run(FieldOp::Ext8Inverse);
    for (x, got) in a.iter().zip(inv) {
        assert_eq!(got, x.try_inverse().unwrap_or(Ext::<F>::ZERO), "ext8 inverse of {x} {what}");
    }
}

/// The degree-8 binomial extensions (BabyBear^8, X^8 - 11; KoalaBear^8, X^8 - 3): the 128-bit
/// configurations' challenge fields.
#[test]
fn degree_8_extension_ops_match_plonky3() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        ext8_ops_match::<BabyBear>(&ctx, &mut rng);
        ext8_ops_match::<KoalaBear>(&ctx, &mut rng);
    }
}

fn ext5_ops_match<F: GpuField, E: p3_field::ExtensionField<F>>(ctx: &GpuContext, rng: &mut rand::rngs::StdRng, name: &str)
where
    StandardUniform: Distribution<E>,
{
    let words = |v: &[E]| -> Vec<u32> { v.iter().flat_map(|e| as_words::<F>(e.as_basis_coefficients_slice()).to_vec()).collect() };
    let from = |w: Vec<u32>| -> Vec<E> { words_to::<F>(w).unwrap().chunks(5).map(|c| E::from_basis_coefficients_slice(c).unwrap()).collect() };
    let mut a: Vec<E> = vec![E::ZERO, E::ONE, E::NEG_ONE, E::from(F::NEG_ONE), E::GENERATOR];
    let mut b: Vec<E> = vec![E::ONE, E::ZERO, E::NEG_ONE, E::TWO, E::GENERATOR];
    a.extend((0..1500).map(|_| rng.random::<E>()));
    b.extend((0..1500).map(|_| rng.random::<E>()));
    let (wa, wb) = (words(&a), words(&b));
    let run = |op| from(run_field_op_in(ctx, F::ID, op, &wa, &wb, 0).unwrap());
    let what = format!("{name} {:?}", ctx.mul_variant());
    let zip = |f: fn(E, E) -> E| a.iter().zip(&b).map(|(&x, &y)| f(x, y)).collect::<Vec<_>>();
    assert_eq!(run(FieldOp::Ext5Add), zip(|x, y| x + y), "ext5 add {what}");
    assert_eq!(run(FieldOp::Ext5Sub), zip(|x, y| x - y), "ext5 sub {what}");
    assert_eq!(run(FieldOp::Ext5Mul), zip(|x, y| x * y), "ext5 mul {what}");
    assert_eq!(run(FieldOp::Ext5Neg), a.iter().map(|&x| -x).collect::<Vec<_>>(), "ext5 neg {what}");
    assert_eq!(run(FieldOp::Ext5Square), a.iter().map(|&x| x.square()).collect::<Vec<_>>(), "ext5 square {what}");
    let inv = run(FieldOp::Ext5Inverse);
    for (x, got) in a.iter().zip(inv) {
        assert_eq!(got, x.try_inverse().unwrap_or(E::ZERO), "ext5 inverse of {x} {what}");
    }
}

/// The degree-5 extensions: BabyBear's binomial X^5 - 2 and KoalaBear's trinomial X^5 + X^2 - 1.
#[test]
fn degree_5_extension_ops_match_plonky3() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        ext5_ops_match::<BabyBear, BinomialExtensionField<BabyBear, 5>>(&ctx, &mut rng, "BabyBear^5");
        ext5_ops_match::<KoalaBear, p3_field::extension::QuinticTrinomialExtensionField<KoalaBear>>(&ctx, &mut rng, "KoalaBear^5 (trinomial)");
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
