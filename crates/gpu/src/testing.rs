//! Test support: runs single WGSL field operations over arrays, so the field library can be
//! compared with Plonky3 word for word. Not part of the stable API.

use crate::context::GpuContext;
use crate::error::Result;
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
}

impl FieldOp {
    /// Words per operand.
    pub fn words(self) -> usize {
        if (self as u32) >= 7 {
            4
        } else {
            1
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct FieldOpParams {
    op: u32,
    count: u32,
    exponent: u32,
    _pad: u32,
}

/// Applies `op` element-wise; `lhs`/`rhs` are Montgomery words (`rhs` ignored by unary ops).
/// The output buffer is poisoned (all ones) before the kernel runs.
pub fn run_field_op(ctx: &GpuContext, op: FieldOp, lhs: &[u32], rhs: &[u32], exponent: u32) -> Result<Vec<u32>> {
    let count = lhs.len() / op.words();
    ctx.scoped("field op test", || {
        let pipeline = ctx.pipeline(Kernel::FieldOpsTest, &[])?;
        let params = ctx.uniform("field op params", &FieldOpParams { op: op as u32, count: count as u32, exponent, _pad: 0 });
        let a = ctx.upload("lhs", lhs);
        let b = ctx.upload("rhs", if rhs.is_empty() { lhs } else { rhs });
        let out = ctx.upload("out", &vec![u32::MAX; lhs.len()]);
        let bind = ctx.device().create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: params.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: a.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: b.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 3, resource: out.as_entire_binding() },
            ],
        });
        let mut encoder = ctx.encoder("field op test");
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups((count as u32).div_ceil(64).max(1), 1, 1);
        }
        ctx.submit_and_read(encoder, &out, lhs.len())
    })
}
