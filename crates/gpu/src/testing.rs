//! Test support: runs single WGSL field operations over arrays, so the field library can be
//! compared with Plonky3 word for word. Not part of the stable API.

use crate::context::{Dispatch, GpuContext};
use crate::error::Result;
use crate::field::FieldId;
use crate::shaders::Kernel;

/// Operation codes of wgsl/test/field_ops.wgsl.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum FieldOp {
    Add = 0,
    Sub = 1,
    Neg = 2,
    Mul = 3,
    Square = 4,
    Pow = 5,
    Inverse = 6,
    Ext4Add = 7,
    Ext4Sub = 8,
    Ext4Neg = 9,
    Ext4Mul = 10,
    Ext4Square = 11,
    Ext4Inverse = 12,
    Ext8Add = 13,
    Ext8Sub = 14,
    Ext8Neg = 15,
    Ext8Mul = 16,
    Ext8Square = 17,
    Ext8Inverse = 18,
    Ext5Add = 19,
    Ext5Sub = 20,
    Ext5Neg = 21,
    Ext5Mul = 22,
    Ext5Square = 23,
    Ext5Inverse = 24,
}

impl FieldOp {
    /// Words per operand.
    pub fn words(self) -> usize {
        match self as u32 {
            19.. => 5,
            13.. => 8,
            7.. => 4,
            _ => 1,
        }
    }
}

/// Rust twin of `FieldOpParams` in wgsl/test/field_ops.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct FieldOpParams {
    op: u32,
    count: u32,
    exponent: u32,
    _pad: u32,
}

/// Applies `op` element-wise over `field`; `lhs`/`rhs` are Montgomery words (`rhs` ignored by
/// unary ops). The output buffer is poisoned (all ones) before the kernel runs.
pub fn run_field_op_in(ctx: &GpuContext, field: FieldId, op: FieldOp, lhs: &[u32], rhs: &[u32], exponent: u32) -> Result<Vec<u32>> {
    let count = lhs.len() / op.words();
    ctx.scoped("field op test", || {
        let pipeline = ctx.pipeline_for(field, Kernel::FieldOpsTest, &[])?;
        let params = ctx.uniform("field op params", &FieldOpParams { op: op as u32, count: count as u32, exponent, _pad: 0 });
        let a = ctx.upload("lhs", lhs);
        let b = ctx.upload("rhs", if rhs.is_empty() { lhs } else { rhs });
        let out = ctx.upload("out", &vec![u32::MAX; lhs.len()]);
        let bind = ctx.bind_buffers(&pipeline, &[&params, &a, &b, &out]);
        let mut batch = ctx.batch("field op test");
        batch.record(&[Dispatch { pipeline: (*pipeline).clone(), bind, groups: (count as u32).div_ceil(64) }]);
        let slot = batch.read(&out, 0, lhs.len());
        ctx.run(batch)?.into_words(slot)
    })
}

/// The WGSL twins of this file's parameter structs, checked by `shaders::tests`.
#[cfg(test)]
pub(crate) const WGSL_TWINS: &[crate::shaders::TwinLayout] =
    &[crate::shaders::twin_layout!(FieldOpParams as "FieldOpParams" in "test/field_ops" { op, count, exponent })];
