//! Every WGSL field routine against Plonky3, on both multiply variants, with edge values.

mod common;

use p3_baby_bear::BabyBear;
use p3_field::extension::BinomialExtensionField;
use p3_field::{BasedVectorSpace, Field, PrimeCharacteristicRing};
use rand::RngExt;
use whir_wgpu::gpu::field::{as_words, from_words};
use whir_wgpu::gpu::testing::{run_field_op, FieldOp};

type Ext = BinomialExtensionField<BabyBear, 4>;

fn base_operands(rng: &mut rand::rngs::StdRng) -> (Vec<BabyBear>, Vec<BabyBear>) {
    let edges = [BabyBear::ZERO, BabyBear::ONE, BabyBear::NEG_ONE, BabyBear::TWO, -BabyBear::TWO];
    let mut a = Vec::new();
    let mut b = Vec::new();
    for x in edges {
        for y in edges {
            a.push(x);
            b.push(y);
        }
    }
    a.extend(common::random_vec(rng, 4000));
    b.extend(common::random_vec(rng, 4000));
    (a, b)
}

#[test]
fn base_field_ops_match_plonky3() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let (a, b) = base_operands(&mut rng);
        let run = |op, exponent| {
            from_words(run_field_op(&ctx, op, as_words(&a), as_words(&b), exponent).unwrap()).unwrap()
        };
        let v = ctx.mul_variant();
        let zip = |f: fn(BabyBear, BabyBear) -> BabyBear| a.iter().zip(&b).map(|(&x, &y)| f(x, y)).collect::<Vec<_>>();
        let map = |f: &dyn Fn(BabyBear) -> BabyBear| a.iter().map(|&x| f(x)).collect::<Vec<_>>();
        assert_eq!(run(FieldOp::Add, 0), zip(|x, y| x + y), "add {v:?}");
        assert_eq!(run(FieldOp::Sub, 0), zip(|x, y| x - y), "sub {v:?}");
        assert_eq!(run(FieldOp::Mul, 0), zip(|x, y| x * y), "mul {v:?}");
        assert_eq!(run(FieldOp::Neg, 0), map(&|x| -x), "neg {v:?}");
        assert_eq!(run(FieldOp::Square, 0), map(&|x| x.square()), "square {v:?}");
        for e in [0u32, 1, 2, 7, 0x7800_0000, rng.random()] {
            assert_eq!(run(FieldOp::Pow, e), map(&|x| x.exp_u64(e as u64)), "pow {e} {v:?}");
        }
        let inv = run(FieldOp::Inverse, 0);
        for (x, got) in a.iter().zip(inv) {
            let want = x.try_inverse().unwrap_or(BabyBear::ZERO);
            assert_eq!(got, want, "inverse of {x} {v:?}");
        }
    }
}

fn ext_words(v: &[Ext]) -> Vec<u32> {
    v.iter().flat_map(|e| as_words(e.as_basis_coefficients_slice()).to_vec()).collect()
}

fn ext_from_words(w: Vec<u32>) -> Vec<Ext> {
    from_words(w).unwrap().chunks(4).map(|c| Ext::from_basis_coefficients_slice(c).unwrap()).collect()
}

#[test]
fn extension_field_ops_match_plonky3() {
    let mut rng = common::rng();
    for ctx in common::contexts() {
        let mut a: Vec<Ext> = vec![Ext::ZERO, Ext::ONE, Ext::NEG_ONE, Ext::from(BabyBear::NEG_ONE)];
        let mut b: Vec<Ext> = vec![Ext::ONE, Ext::ZERO, Ext::NEG_ONE, Ext::TWO];
        a.extend((0..2000).map(|_| rng.random::<Ext>()));
        b.extend((0..2000).map(|_| rng.random::<Ext>()));
        let (wa, wb) = (ext_words(&a), ext_words(&b));
        let run = |op| ext_from_words(run_field_op(&ctx, op, &wa, &wb, 0).unwrap());
        let v = ctx.mul_variant();
        let zip = |f: fn(Ext, Ext) -> Ext| a.iter().zip(&b).map(|(&x, &y)| f(x, y)).collect::<Vec<_>>();
        assert_eq!(run(FieldOp::Ext4Add), zip(|x, y| x + y), "ext add {v:?}");
        assert_eq!(run(FieldOp::Ext4Sub), zip(|x, y| x - y), "ext sub {v:?}");
        assert_eq!(run(FieldOp::Ext4Mul), zip(|x, y| x * y), "ext mul {v:?}");
        assert_eq!(run(FieldOp::Ext4Neg), a.iter().map(|&x| -x).collect::<Vec<_>>(), "ext neg {v:?}");
        assert_eq!(run(FieldOp::Ext4Square), a.iter().map(|&x| x.square()).collect::<Vec<_>>(), "ext square {v:?}");
        let inv = run(FieldOp::Ext4Inverse);
        for (x, got) in a.iter().zip(inv) {
            assert_eq!(got, x.try_inverse().unwrap_or(Ext::ZERO), "ext inverse of {x} {v:?}");
        }
    }
}

#[test]
fn montgomery_words_are_plonky3s() {
    assert_eq!(as_words(&[BabyBear::ONE])[0], 0x0fff_fffe);
    assert!(from_words(vec![0x7800_0001]).is_err(), "p itself is not a canonical word");
}
