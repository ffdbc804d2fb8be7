//! WGSL sources and their composition. Every kernel file in `wgsl/` names what it needs with
//! `// #import name` lines; composition pastes each import once, in dependency order, and puts
//! the field-multiply variant behind the virtual import `field/mul`. Numeric constants that
//! depend on the adapter (tile sizes) are prepended as `const NAME: u32 = ...;`.

use std::collections::HashSet;

use crate::error::{GpuError, Result};

/// How the 32x32 -> 64-bit high product is computed in WGSL.

/// Candidates one workgroup of wgsl/pow/grind.wgsl tries (its workgroup size, composed in).
pub(crate) const GRIND_GROUP: u32 = 128;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MulVariant {
    /// Native `u64` products; needs SHADER_INT64.
    U64,
    /// 16-bit limbs in `u32`; runs everywhere.
    Emulated,
}

impl MulVariant {
    pub const ALL: [MulVariant; 2] = [MulVariant::U64, MulVariant::Emulated];

    fn source_name(self) -> &'static str {
        match self {
            MulVariant::U64 => "field/mul_u64",
            MulVariant::Emulated => "field/mul_emulated",
        }
    }
}

macro_rules! wgsl_sources {
    ($($name:literal),* $(,)?) => {
        /// Every WGSL file, by its path under `wgsl/` without the extension.
        pub const SOURCES: &[(&str, &str)] = &[
            $(($name, include_str!(concat!("../../../wgsl/", $name, ".wgsl")))),*
        ];
    };
}

wgsl_sources!(
    "util/dispatch",
    "field/mul_u64",
    "field/mul_emulated",
    "field/babybear",
    "field/ext4",
    "util/copy",
    "ntt/dif_pass",
    "ntt/bit_reverse",
    "poseidon2/permutation",
    "poseidon2/permute_batch",
    "merkle/sponge",
    "merkle/hash_leaves",
    "merkle/absorb_rows",
    "util/row_checksum",
    "merkle/hash_rows",
    "merkle/compress_inject",
    "pow/params",
    "pow/grind",
    "pow/prepare",
    "sumcheck/chain_state",
    "pow/duplex",
    "sumcheck/chain",
    "sumcheck/reduce",
    "sumcheck/round",
    "sumcheck/fold",
    "sumcheck/weights",
    "sumcheck/base",
    "sumcheck/eval",
    "sumcheck/lazy_weights",
    "sumcheck/lazy_round",
    "sumcheck/lazy_base",
    "sumcheck/lazy_coeffs",
    "sumcheck/sponge_step",
    "sumcheck/power_tables",
    "util/gather_params",
    "util/gather",
    "util/copy_block",
    "test/field_ops",
);

/// The kernels (entry points) this crate dispatches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    DifPass,
    BitReverseTiled,
    BitReverseRows,
    BitReverseTiledInPlace,
    BitReverseRowsInPlace,
    Copy,
    Poseidon2Batch,
    HashLeaves,
    /// Leaf sponges absorbing a block of columns (wgsl/merkle/absorb_rows.wgsl).
    AbsorbRows,
    /// Keyed checksums of groups of rows (wgsl/util/row_checksum.wgsl).
    RowChecksum,
    HashRows,
    CompressLevel,
    CompressInject,
    Grind,
    GrindPrepare,
    SumcheckRound,
    SumPartials,
    SumcheckFold,
    AddEqWeights,
    AddSelectWeights,
    FoldSingle,
    ScatterScales,
    AddTablePrefix,
    RoundBase,
    FoldBase,
    EvalPartials,
    Gather,
    CopyBlock,
    ChainObserve,
    ChainSample,
    FoldPairsChained,
    FoldSingleChained,
    FoldBaseChained,
    AddSplitSelectWeights,
    LazyRound,
    LazyRoundBase,
    LazyCoeffs,
    /// One transcript step after a round's commitment (wgsl/sumcheck/sponge_step.wgsl).
    SpongeStep,
    /// Evaluation tables of an out-of-domain point drawn on the GPU.
    PowerTables,
    FieldOpsTest,
}

impl Kernel {
    pub const ALL: [Kernel; 40] = [
        Kernel::DifPass,
        Kernel::BitReverseTiled,
        Kernel::BitReverseRows,
        Kernel::BitReverseTiledInPlace,
        Kernel::BitReverseRowsInPlace,
        Kernel::Copy,
        Kernel::Poseidon2Batch,
        Kernel::HashLeaves,
        Kernel::AbsorbRows,
        Kernel::RowChecksum,
        Kernel::HashRows,
        Kernel::CompressLevel,
        Kernel::CompressInject,
        Kernel::Grind,
        Kernel::GrindPrepare,
        Kernel::SumcheckRound,
        Kernel::SumPartials,
        Kernel::SumcheckFold,
        Kernel::AddEqWeights,
        Kernel::AddSelectWeights,
        Kernel::FoldSingle,
        Kernel::ScatterScales,
        Kernel::AddTablePrefix,
        Kernel::RoundBase,
        Kernel::FoldBase,
        Kernel::EvalPartials,
        Kernel::Gather,
        Kernel::CopyBlock,
        Kernel::ChainObserve,
        Kernel::ChainSample,
        Kernel::FoldPairsChained,
        Kernel::FoldSingleChained,
        Kernel::FoldBaseChained,
        Kernel::AddSplitSelectWeights,
        Kernel::LazyRound,
        Kernel::LazyRoundBase,
        Kernel::LazyCoeffs,
        Kernel::SpongeStep,
        Kernel::PowerTables,
        Kernel::FieldOpsTest,
    ];

    pub fn source_name(self) -> &'static str {
        match self {
            Kernel::DifPass => "ntt/dif_pass",
            Kernel::BitReverseTiled | Kernel::BitReverseRows | Kernel::BitReverseTiledInPlace | Kernel::BitReverseRowsInPlace => "ntt/bit_reverse",
            Kernel::Copy => "util/copy",
            Kernel::Poseidon2Batch => "poseidon2/permute_batch",
            Kernel::HashLeaves => "merkle/hash_leaves",
            Kernel::AbsorbRows => "merkle/absorb_rows",
            Kernel::RowChecksum => "util/row_checksum",
            Kernel::HashRows => "merkle/hash_rows",
            Kernel::CompressLevel => "poseidon2/permute_batch",
            Kernel::CompressInject => "merkle/compress_inject",
            Kernel::Grind => "pow/grind",
            Kernel::GrindPrepare => "pow/prepare",
            Kernel::SumcheckRound | Kernel::SumPartials => "sumcheck/round",
            Kernel::SumcheckFold | Kernel::FoldSingle => "sumcheck/fold",
            Kernel::AddEqWeights | Kernel::AddSelectWeights | Kernel::AddSplitSelectWeights | Kernel::ScatterScales | Kernel::AddTablePrefix => "sumcheck/weights",
            Kernel::RoundBase | Kernel::FoldBase => "sumcheck/base",
            Kernel::EvalPartials => "sumcheck/eval",
            Kernel::Gather => "util/gather",
            Kernel::CopyBlock => "util/copy_block",
            Kernel::ChainObserve | Kernel::ChainSample => "sumcheck/chain",
            Kernel::FoldPairsChained | Kernel::FoldSingleChained => "sumcheck/fold",
            Kernel::FoldBaseChained => "sumcheck/base",
            Kernel::LazyRound => "sumcheck/lazy_round",
            Kernel::LazyRoundBase => "sumcheck/lazy_base",
            Kernel::LazyCoeffs => "sumcheck/lazy_coeffs",
            Kernel::SpongeStep => "sumcheck/sponge_step",
            Kernel::PowerTables => "sumcheck/power_tables",
            Kernel::FieldOpsTest => "test/field_ops",
        }
    }

    pub fn entry_point(self) -> &'static str {
        match self {
            Kernel::DifPass => "dif_pass",
            Kernel::BitReverseTiled => "bit_reverse_tiled",
            Kernel::BitReverseRows => "bit_reverse_rows",
            Kernel::BitReverseTiledInPlace => "bit_reverse_tiled_in_place",
            Kernel::BitReverseRowsInPlace => "bit_reverse_rows_in_place",
            Kernel::Copy => "copy_words",
            Kernel::Poseidon2Batch => "permute_batch",
            Kernel::HashLeaves => "hash_leaves",
            Kernel::AbsorbRows => "absorb_rows",
            Kernel::RowChecksum => "row_checksum",
            Kernel::HashRows => "hash_rows",
            Kernel::CompressLevel => "compress_pairs",
            Kernel::CompressInject => "compress_inject",
            Kernel::Grind => "grind",
            Kernel::GrindPrepare => "grind_prepare",
            Kernel::SumcheckRound => "round_partials",
            Kernel::SumPartials => "sum_partials",
            Kernel::SumcheckFold => "fold_pairs",
            Kernel::AddEqWeights => "add_eq_weights",
            Kernel::AddSelectWeights => "add_select_weights",
            Kernel::FoldSingle => "fold_single",
            Kernel::ScatterScales => "scatter_scales",
            Kernel::AddTablePrefix => "add_table_prefix",
            Kernel::RoundBase => "round_partials_base",
            Kernel::FoldBase => "fold_base",
            Kernel::EvalPartials => "eval_partials",
            Kernel::Gather => "gather_words",
            Kernel::CopyBlock => "copy_block",
            Kernel::ChainObserve => "chain_observe",
            Kernel::ChainSample => "chain_sample",
            Kernel::FoldPairsChained => "fold_pairs_chained",
            Kernel::FoldSingleChained => "fold_single_chained",
            Kernel::FoldBaseChained => "fold_base_chained",
            Kernel::AddSplitSelectWeights => "add_split_select_weights",
            Kernel::LazyRound => "lazy_round",
            Kernel::LazyRoundBase => "lazy_round_base",
            Kernel::LazyCoeffs => "lazy_coeffs",
            Kernel::SpongeStep => "sponge_step",
            Kernel::PowerTables => "power_tables",
            Kernel::FieldOpsTest => "field_op",
        }
    }

    /// Composition constants with representative values (for validation and cross-compilation).
    pub fn default_consts(self) -> &'static [(&'static str, u32)] {
        match self {
            Kernel::DifPass => &[("NTT_TILE", 8192), ("NTT_SKIP_BUTTERFLIES", 0), ("NTT_IN_PLACE", 0)],
            Kernel::Grind => &[("GRIND_GROUP", GRIND_GROUP)],
            _ => &[],
        }
    }
}

fn source(name: &str) -> Result<&'static str> {
    SOURCES.iter().find(|(n, _)| *n == name).map(|(_, s)| *s).ok_or_else(|| GpuError::Shader {
        kernel: name.to_string(),
        reason: format!("unknown WGSL source {name:?}"),
    })
}

fn imports(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|l| l.trim().strip_prefix("// #import ").map(str::trim))
}

fn append(
    name: &str,
    variant: MulVariant,
    seen: &mut HashSet<String>,
    stack: &mut Vec<String>,
    out: &mut String,
) -> Result<()> {
    let name = if name == "field/mul" { variant.source_name() } else { name };
    if seen.contains(name) {
        return Ok(());
    }
    if stack.iter().any(|s| s == name) {
        return Err(GpuError::Shader {
            kernel: name.to_string(),
            reason: format!("import cycle: {} -> {name}", stack.join(" -> ")),
        });
    }
    let text = source(name)?;
    stack.push(name.to_string());
    for dep in imports(text) {
        append(dep, variant, seen, stack, out)?;
    }
    stack.pop();
    seen.insert(name.to_string());
    out.push_str(&format!("// ---- {name}.wgsl ----\n"));
    out.push_str(text);
    out.push('\n');
    Ok(())
}

/// The complete WGSL for the kernel file `name` with the given multiply variant and constants.
pub fn compose(name: &str, variant: MulVariant, consts: &[(&str, u32)]) -> Result<String> {
    let mut out = String::new();
    for (k, v) in consts {
        out.push_str(&format!("const {k}: u32 = {v}u;\n"));
    }
    append(name, variant, &mut HashSet::new(), &mut Vec::new(), &mut out)?;
    Ok(out)
}
