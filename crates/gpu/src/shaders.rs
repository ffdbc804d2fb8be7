//! WGSL sources and their composition. Every kernel file in `wgsl/` names what it needs with
//! `// #import name` lines; composition pastes each import once, in dependency order, and puts
//! the field-multiply variant behind the virtual import `field/mul` (and the Keccak lane type,
//! [`KeccakLanes`], behind `keccak/f`) and the prime field
//! ([`FieldId`]) behind `field/constants`, `poseidon2/sbox`, `poseidon2/field16` and
//! `poseidon2/field24`, and the extension ([`ExtensionId`]) of the field-generic kernels behind
//! `field/ext`. Numeric constants that
//! depend on the adapter (tile sizes) are prepended as `const NAME: u32 = ...;`.

use std::collections::HashSet;

use crate::error::{GpuError, Result};
use crate::field::{ExtensionId, FieldId};

/// Candidates one workgroup of wgsl/pow/grind.wgsl tries (its workgroup size, composed in).
pub(crate) const GRIND_GROUP: u32 = 128;

/// How the 32x32 -> 64-bit high product is computed in WGSL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MulVariant {
    /// Native `u64` products; needs SHADER_INT64.
    U64,
    /// 16-bit limbs in `u32`; runs everywhere.
    Emulated,
}

impl MulVariant {
    /// Both variants.
    pub const ALL: [MulVariant; 2] = [MulVariant::U64, MulVariant::Emulated];

    fn source_name(self) -> &'static str {
        match self {
            MulVariant::U64 => "field/mul_u64",
            MulVariant::Emulated => "field/mul_emulated",
        }
    }

    /// The Keccak lanes that go with this multiply: native 64-bit lanes with SHADER_INT64,
    /// else `vec2<u32>` (what [`compose_kernel`] composes; a context composes the lanes its
    /// tuning asks for, [`KeccakLanes::of`]).
    pub fn keccak_lanes(self) -> KeccakLanes {
        match self {
            MulVariant::U64 => KeccakLanes::U64,
            MulVariant::Emulated => KeccakLanes::Vec2,
        }
    }
}

/// How Keccak kernels hold a 64-bit lane: the Keccak-f build behind the virtual import
/// `keccak/f`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeccakLanes {
    /// `vec2<u32>` (runs everywhere).
    Vec2,
    /// Native `u64` (needs SHADER_INT64: the u64 multiply variant).
    U64,
}

impl KeccakLanes {
    /// The lanes a context multiplying with `variant` composes: native ones only where the
    /// multiply has them and `u64_lanes` asks for them (`GpuTuning::keccak_u64_lanes`).
    pub fn of(variant: MulVariant, u64_lanes: bool) -> Self {
        match (variant, u64_lanes) {
            (MulVariant::U64, true) => KeccakLanes::U64,
            _ => KeccakLanes::Vec2,
        }
    }

    fn source_name(self) -> &'static str {
        match self {
            KeccakLanes::U64 => "keccak/f_u64",
            KeccakLanes::Vec2 => "keccak/f_vec2",
        }
    }
}

macro_rules! wgsl_sources {
    ($($name:literal),* $(,)?) => {
        /// Every WGSL file, by its path under `wgsl/` without the extension.
        pub const SOURCES: &[(&str, &str)] = &[
            $(($name, include_str!(concat!("../wgsl/", $name, ".wgsl")))),*
        ];
    };
}

wgsl_sources!(
    "util/dispatch",
    "field/mul_u64",
    "field/mul_emulated",
    "field/prime",
    "field/babybear",
    "field/koalabear",
    "field/ext4",
    "field/ext8",
    "field/ext5",
    "field/ext_ops4",
    "field/ext_ops8",
    "field/ext_ops5",
    "util/copy",
    "ntt/dif_pass",
    "ntt/bit_reverse",
    "poseidon2/common",
    "poseidon2/permutation",
    "poseidon2/permutation24",
    "poseidon2/babybear",
    "poseidon2/koalabear",
    "poseidon2/babybear16",
    "poseidon2/koalabear16",
    "poseidon2/babybear24",
    "poseidon2/koalabear24",
    "poseidon2/permute_batch",
    "poseidon2/permute_batch24",
    "poseidon2/lanes",
    "poseidon2/permute_lanes",
    "merkle/leaf_common",
    "merkle/node_poseidon2",
    "merkle/node_keccak",
    "merkle/keccak_leaf",
    "merkle/sponge",
    "merkle/sponge24",
    "merkle/hash_leaves",
    "merkle/absorb_rows",
    "util/row_checksum",
    "merkle/hash_rows",
    "merkle/compress_inject",
    "merkle/compress_level",
    "pow/params",
    "pow/grind",
    "pow/prepare",
    "sumcheck/chain_state",
    "pow/duplex",
    "pow/duplex_lanes",
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
    "sumcheck/powers_tail",
    "sumcheck/slot_eval",
    "sumcheck/slot_sum",
    "sumcheck/lazy_slot_round",
    "sumcheck/slot_weights",
    "util/gather_params",
    "util/gather",
    "util/copy_block",
    "util/hiding_rows",
    "util/reverse_bits",
    "keccak/f_vec2",
    "keccak/f_u64",
    "keccak/kernels",
    "keccak/grind",
    "test/field_ops",
);

/// The kernel inventory: every entry point this crate dispatches, with its WGSL file (under
/// `wgsl/`, without the extension), its entry point, and the composition constants it needs
/// with representative values (for validation and cross-compilation; the dispatching code
/// composes the adapter's). Every kernel is composed in both multiply variants ([`MulVariant`]).
macro_rules! kernels {
    ($($(#[$doc:meta])* $name:ident => ($source:literal, $entry:literal $(, consts: $consts:expr)?),)*) => {
        /// The kernels (entry points) this crate dispatches.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Kernel {
            $($(#[$doc])* $name,)*
        }

        impl Kernel {
            /// Every kernel.
            pub const ALL: [Kernel; [$(stringify!($name)),*].len()] = [$(Kernel::$name),*];

            /// The WGSL file, under `wgsl/` without the extension.
            pub fn source_name(self) -> &'static str {
                match self {
                    $(Kernel::$name => $source,)*
                }
            }

            /// The kernel's entry point in its WGSL file.
            pub fn entry_point(self) -> &'static str {
                match self {
                    $(Kernel::$name => $entry,)*
                }
            }

            /// Composition constants with representative values (for validation and
            /// cross-compilation).
            pub fn default_consts(self) -> &'static [(&'static str, u32)] {
                match self {
                    $(Kernel::$name => kernels!(@consts $($consts)?),)*
                }
            }
        }
    };
    (@consts) => { &[] };
    (@consts $consts:expr) => { $consts };
}

kernels! {
    /// One pass of a radix-2 decimation-in-frequency column NTT, output in bit-reversed row order
    /// (wgsl/ntt/dif_pass.wgsl).
    DifPass => ("ntt/dif_pass", "dif_pass", consts: &[("NTT_TILE", 8192), ("NTT_SKIP_BUTTERFLIES", 0), ("NTT_IN_PLACE", 0)]),
    /// Row bit-reversal, out of place, through workgroup-memory tiles (wgsl/ntt/bit_reverse.wgsl).
    BitReverseTiled => ("ntt/bit_reverse", "bit_reverse_tiled"),
    /// Row bit-reversal, out of place, one thread an element (very wide rows, tiny heights).
    BitReverseRows => ("ntt/bit_reverse", "bit_reverse_rows"),
    /// `BitReverseTiled` in place.
    BitReverseTiledInPlace => ("ntt/bit_reverse", "bit_reverse_tiled_in_place"),
    /// `BitReverseRows` in place.
    BitReverseRowsInPlace => ("ntt/bit_reverse", "bit_reverse_rows_in_place"),
    /// Plain device copy, four words a thread (wgsl/util/copy.wgsl).
    Copy => ("util/copy", "copy_words"),
    /// Width-16 permutations, one thread a state (wgsl/poseidon2/permute_batch.wgsl).
    Poseidon2Batch => ("poseidon2/permute_batch", "permute_batch"),
    /// Width-24 permutations, one thread a state (wgsl/poseidon2/permute_batch24.wgsl).
    Poseidon2Batch24 => ("poseidon2/permute_batch24", "permute_batch24"),
    /// Leaf digests of a matrix's rows, fused with the tree's first levels (wgsl/merkle/hash_leaves.wgsl).
    HashLeaves => ("merkle/hash_leaves", "hash_leaves"),
    /// Leaf sponges absorbing a block of columns (wgsl/merkle/absorb_rows.wgsl).
    AbsorbRows => ("merkle/absorb_rows", "absorb_rows"),
    /// Keyed checksums of groups of rows (wgsl/util/row_checksum.wgsl).
    RowChecksum => ("util/row_checksum", "row_checksum"),
    /// Leaf digests of chosen rows, for openings of a tree without its leaf layer
    /// (wgsl/merkle/hash_rows.wgsl).
    HashRows => ("merkle/hash_rows", "hash_rows"),
    /// One Merkle level: node i compresses children 2i and 2i + 1 (wgsl/poseidon2/permute_batch.wgsl).
    CompressLevel => ("poseidon2/permute_batch", "compress_pairs"),
    /// Width-16 permutations with a state spread over 16 invocations (wgsl/poseidon2/lanes.wgsl).
    Poseidon2Lanes => ("poseidon2/permute_lanes", "permute_lanes"),
    /// `CompressLevel` with a node's permutation spread over 16 invocations.
    CompressLevelLanes => ("poseidon2/permute_lanes", "compress_pairs_lanes"),
    /// One level of a tree over matrices of several heights, compressing in the leaf digests of the
    /// shorter matrices that join there (wgsl/merkle/compress_inject.wgsl).
    CompressInject => ("merkle/compress_inject", "compress_inject"),
    /// `HashLeaves` over trees whose leaves hash with Poseidon2 of width 24 (merkle/sponge24.wgsl
    /// behind `merkle/leaf`; nodes still compress with width 16).
    HashLeaves24 => ("merkle/hash_leaves", "hash_leaves"),
    /// `AbsorbRows` with width-24 leaves.
    AbsorbRows24 => ("merkle/absorb_rows", "absorb_rows"),
    /// `HashRows` with width-24 leaves.
    HashRows24 => ("merkle/hash_rows", "hash_rows"),
    /// `CompressInject` with width-24 leaves.
    CompressInject24 => ("merkle/compress_inject", "compress_inject"),
    /// Proof-of-work search for the smallest witness over a range (wgsl/pow/grind.wgsl).
    Grind => ("pow/grind", "grind", consts: &[("GRIND_GROUP", GRIND_GROUP)]),
    /// Sets up a grind on the GPU from observed words, in the submission that made them
    /// (wgsl/pow/prepare.wgsl).
    GrindPrepare => ("pow/prepare", "grind_prepare", consts: &[("TRANSCRIPT_LANES", 16)]),
    /// Partial sums of a sumcheck round's h(0) and h(inf), one pair a workgroup
    /// (wgsl/sumcheck/round.wgsl).
    SumcheckRound => ("sumcheck/round", "round_partials"),
    /// Reduces partial pairs into one pair a workgroup (wgsl/sumcheck/round.wgsl).
    SumPartials => ("sumcheck/round", "sum_partials"),
    /// Binds the last variable of f and w to a challenge, into fresh tables (wgsl/sumcheck/fold.wgsl).
    SumcheckFold => ("sumcheck/fold", "fold_pairs"),
    /// Adds scaled equality weights to a weight table (wgsl/sumcheck/weights.wgsl).
    AddEqWeights => ("sumcheck/weights", "add_eq_weights"),
    /// Adds scaled select (power) weights to a weight table (wgsl/sumcheck/weights.wgsl).
    AddSelectWeights => ("sumcheck/weights", "add_select_weights"),
    /// `SumcheckFold` of f alone (the passes of a multilinear evaluation).
    FoldSingle => ("sumcheck/fold", "fold_single"),
    /// Writes select weights' scales into a zeroed table at their points' indices, for an NTT
    /// (wgsl/sumcheck/weights.wgsl).
    ScatterScales => ("sumcheck/weights", "scatter_scales"),
    /// Adds the first entries of a transformed table to a weight table (wgsl/sumcheck/weights.wgsl).
    AddTablePrefix => ("sumcheck/weights", "add_table_prefix"),
    /// Multiplies a weight table by one extension element (wgsl/sumcheck/weights.wgsl).
    ScaleTable => ("sumcheck/weights", "scale_table"),
    /// `SumcheckRound` over a base-field f (the first round; wgsl/sumcheck/base.wgsl).
    RoundBase => ("sumcheck/base", "round_partials_base"),
    /// Folds a base-field f into the extension (wgsl/sumcheck/base.wgsl).
    FoldBase => ("sumcheck/base", "fold_base"),
    /// Partial sums of a table's evaluation against a weight that factors over 8-bit index chunks
    /// (wgsl/sumcheck/eval.wgsl).
    EvalPartials => ("sumcheck/eval", "eval_partials"),
    /// Gathers items of `width` words by index in one dispatch (wgsl/util/gather.wgsl).
    Gather => ("util/gather", "gather_words"),
    /// Copies a block of words between row-major matrices of different widths
    /// (wgsl/util/copy_block.wgsl).
    CopyBlock => ("util/copy_block", "copy_block"),
    /// Adds a hiding message's randomness rows to its message's codeword, a coset of points a
    /// workgroup (wgsl/util/hiding_rows.wgsl).
    AddHidingRows => ("util/hiding_rows", "add_hiding_rows"),
    /// `AddHidingRows` a row at a time (Horner), for codewords smaller than a coset or more
    /// randomness rows than a coset holds.
    AddHidingRowsHorner => ("util/hiding_rows", "add_hiding_rows_horner"),
    /// A table copied with its row and column indices bit-reversed (wgsl/util/reverse_bits.wgsl).
    ReverseIndexBits => ("util/reverse_bits", "reverse_index_bits"),
    /// Absorbs a round's two values into the GPU transcript and sets up its grind
    /// (wgsl/sumcheck/chain.wgsl).
    ChainObserve => ("sumcheck/chain", "chain_observe", consts: &[("TRANSCRIPT_LANES", 16)]),
    /// `ChainObserve` for a round whose values are its pair moved by known terms, with known
    /// values after them (wgsl/sumcheck/chain.wgsl).
    ChainObserveWire => ("sumcheck/chain", "chain_observe_wire", consts: &[("TRANSCRIPT_LANES", 16)]),
    /// Takes the round's witness and draws its challenge on the GPU (wgsl/sumcheck/chain.wgsl).
    ChainSample => ("sumcheck/chain", "chain_sample", consts: &[("TRANSCRIPT_LANES", 16)]),
    /// `SumcheckFold` with the challenge drawn on the GPU.
    FoldPairsChained => ("sumcheck/fold", "fold_pairs_chained"),
    /// `FoldSingle` with the challenge drawn on the GPU.
    FoldSingleChained => ("sumcheck/fold", "fold_single_chained"),
    /// `FoldBase` with the challenge drawn on the GPU.
    FoldBaseChained => ("sumcheck/base", "fold_base_chained"),
    /// `AddSelectWeights` from split power tables (wgsl/sumcheck/weights.wgsl).
    AddSplitSelectWeights => ("sumcheck/weights", "add_split_select_weights"),
    /// `SumcheckRound` with the weights formed on the fly (wgsl/sumcheck/lazy_round.wgsl).
    LazyRound => ("sumcheck/lazy_round", "lazy_round"),
    /// `RoundBase` with the weights formed on the fly (wgsl/sumcheck/lazy_base.wgsl).
    LazyRoundBase => ("sumcheck/lazy_base", "lazy_round_base"),
    /// Updates the lazy weights' coefficients after a chained fold (wgsl/sumcheck/lazy_coeffs.wgsl).
    LazyCoeffs => ("sumcheck/lazy_coeffs", "lazy_coeffs"),
    /// One step of a duplex-sponge script run after a Merkle root (wgsl/sumcheck/sponge_step.wgsl).
    SpongeStep => ("sumcheck/sponge_step", "sponge_step", consts: &[("TRANSCRIPT_LANES", 16)]),
    /// Evaluation tables of the univariate expansion of a point drawn on the GPU.
    PowerTables => ("sumcheck/power_tables", "power_tables"),
    /// Adds a tail's part to f's value as a univariate polynomial at a point drawn on the GPU
    /// (wgsl/sumcheck/powers_tail.wgsl).
    AddPowersTail => ("sumcheck/powers_tail", "add_powers_tail"),
    /// Evaluations of slots of a table at one point, in partial sums (wgsl/sumcheck/slot_eval.wgsl).
    EvalSlotPartials => ("sumcheck/slot_eval", "eval_slot_partials"),
    /// Adds each slot's partial sums from `EvalSlotPartials` (wgsl/sumcheck/slot_sum.wgsl).
    SumSlotPartials => ("sumcheck/slot_sum", "sum_slot_partials"),
    /// A chained round of lazy slot weights: its terms bound and combined (wgsl/sumcheck/lazy_slot_round.wgsl).
    LazySlotRound => ("sumcheck/lazy_slot_round", "lazy_slot_round"),
    /// Equality and successor weights over slots of a table (wgsl/sumcheck/slot_weights.wgsl).
    AddSlotWeights => ("sumcheck/slot_weights", "add_slot_weights"),
    /// `HashLeaves` of Plonky3's Keccak trees (merkle/keccak_leaf.wgsl behind `merkle/leaf`,
    /// merkle/node_keccak.wgsl behind `merkle/node`).
    HashLeavesKeccak => ("merkle/hash_leaves", "hash_leaves"),
    /// `HashRows` of Keccak trees.
    HashRowsKeccak => ("merkle/hash_rows", "hash_rows"),
    /// `CompressInject` of Keccak trees.
    CompressInjectKeccak => ("merkle/compress_inject", "compress_inject"),
    /// One level of a Keccak tree (`CompressLevel`'s bindings; wgsl/merkle/compress_level.wgsl).
    CompressLevelKeccak => ("merkle/compress_level", "compress_level"),
    /// Keccak-f\[1600\] on each of a batch of 25-lane states (wgsl/keccak/kernels.wgsl).
    KeccakPermute => ("keccak/kernels", "keccak_permute"),
    /// Keccak-256 (Plonky3's `Keccak256Hash`) of equal-length byte messages
    /// (wgsl/keccak/kernels.wgsl).
    Keccak256Bytes => ("keccak/kernels", "keccak256_bytes"),
    /// Proof-of-work search for Plonky3's Keccak transcript (`SerializingChallenger32` over a
    /// Keccak-256 `HashChallenger`; wgsl/keccak/grind.wgsl).
    KeccakGrind => ("keccak/grind", "keccak_grind", consts: &[("GRIND_GROUP", GRIND_GROUP)]),
    /// Test kernel: one field operation over arrays of operands (wgsl/test/field_ops.wgsl).
    FieldOpsTest => ("test/field_ops", "field_op"),
}

impl Kernel {
    /// The extensions this kernel is composed over: the field-generic sumcheck kernels (those
    /// importing `field/ext`) every [`ExtensionId`]; the rest, written against degree 4 (the
    /// transcript kernels, which observe and draw degree-4 values) or not touching an
    /// extension, degree 4 alone.
    pub fn extensions(self) -> &'static [ExtensionId] {
        use Kernel::*;
        match self {
            SumcheckRound
            | SumPartials
            | SumcheckFold
            | FoldSingle
            | AddEqWeights
            | AddSelectWeights
            | ScatterScales
            | AddTablePrefix
            | ScaleTable
            | RoundBase
            | FoldBase
            | EvalPartials
            | AddSplitSelectWeights
            | LazyRound
            | LazyRoundBase
            | EvalSlotPartials
            | SumSlotPartials
            | AddSlotWeights
            | ChainObserve
            | ChainObserveWire
            | ChainSample
            | FoldPairsChained
            | FoldSingleChained
            | FoldBaseChained
            | SpongeStep
            | PowerTables
            | AddPowersTail
            | LazyCoeffs
            | LazySlotRound => &ExtensionId::ALL,
            _ => &[ExtensionId::Degree4],
        }
    }
}

impl Kernel {
    /// This kernel's instance over trees whose leaves hash with Poseidon2 of width 24, for the
    /// kernels that hash rows into leaves (`HashLeaves`, `AbsorbRows`, `HashRows`,
    /// `CompressInject`); None for the others.
    pub fn with_wide_leaves(self) -> Option<Kernel> {
        use Kernel::*;
        match self {
            HashLeaves | HashLeaves24 => Some(HashLeaves24),
            AbsorbRows | AbsorbRows24 => Some(AbsorbRows24),
            HashRows | HashRows24 => Some(HashRows24),
            CompressInject | CompressInject24 => Some(CompressInject24),
            _ => None,
        }
    }

    /// This Merkle kernel's instance over Plonky3's Keccak trees (leaves and nodes hashed with
    /// Keccak): for the leaf kernels `HashLeaves`, `HashRows`, `CompressInject` and the levels
    /// `CompressLevel`, `CompressLevelLanes`; None for the others (no Keccak tree absorbs rows
    /// a column block at a time).
    pub fn with_keccak(self) -> Option<Kernel> {
        use Kernel::*;
        match self {
            HashLeaves | HashLeaves24 | HashLeavesKeccak => Some(HashLeavesKeccak),
            HashRows | HashRows24 | HashRowsKeccak => Some(HashRowsKeccak),
            CompressInject | CompressInject24 | CompressInjectKeccak => Some(CompressInjectKeccak),
            CompressLevel | CompressLevelLanes | CompressLevelKeccak => Some(CompressLevelKeccak),
            _ => None,
        }
    }

    /// Of the kernels that hash rows into leaves: whether this one binds the width-16
    /// permutation's constants (at 0); all do but the width-24 instances that hash rows alone
    /// (`HashRows24`, `AbsorbRows24`). The width-24 sponge's constants are at binding 10.
    pub fn binds_node_constants(self) -> bool {
        !matches!(self, Kernel::HashRows24 | Kernel::AbsorbRows24)
    }

    /// The WGSL files behind the virtual imports `merkle/leaf` and `merkle/node`: one list, so
    /// that a kernel's leaves and nodes always hash alike.
    fn tree_sources(self) -> (&'static str, &'static str) {
        use Kernel::*;
        match self {
            HashLeaves24 | AbsorbRows24 | HashRows24 | CompressInject24 => ("merkle/sponge24", "merkle/node_poseidon2"),
            HashLeavesKeccak | HashRowsKeccak | CompressInjectKeccak | CompressLevelKeccak => ("merkle/keccak_leaf", "merkle/node_keccak"),
            _ => ("merkle/sponge", "merkle/node_poseidon2"),
        }
    }
}

fn source(name: &str) -> Result<&'static str> {
    SOURCES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| *s)
        .ok_or_else(|| GpuError::Shader { kernel: name.to_string(), reason: format!("unknown WGSL source {name:?}") })
}

fn imports(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|l| l.trim().strip_prefix("// #import ").map(str::trim))
}

/// How the virtual imports resolve: the multiply variant behind `field/mul`, the Keccak lanes
/// behind `keccak/f`, the field behind
/// `field/constants` and the `poseidon2/` ones, the extension behind `field/ext`, the leaf sponge
/// behind `merkle/leaf`, the node compression behind `merkle/node`.
#[derive(Clone, Copy)]
struct Resolve {
    variant: MulVariant,
    field: FieldId,
    ext: ExtensionId,
    leaf: &'static str,
    node: &'static str,
    keccak: KeccakLanes,
}

impl Resolve {
    fn source_name<'a>(&self, name: &'a str) -> &'a str {
        match name {
            "field/mul" => self.variant.source_name(),
            "keccak/f" => self.keccak.source_name(),
            "field/constants" => self.field.constants_source(),
            "poseidon2/sbox" => self.field.poseidon2_source(),
            "poseidon2/field16" => self.field.poseidon2_16_source(),
            "poseidon2/field24" => self.field.poseidon2_24_source(),
            "field/ext" => self.ext.ops_source(),
            "merkle/leaf" => self.leaf,
            "merkle/node" => self.node,
            other => other,
        }
    }
}

fn append(name: &str, resolve: Resolve, seen: &mut HashSet<String>, stack: &mut Vec<String>, out: &mut String) -> Result<()> {
    let name = resolve.source_name(name);
    if seen.contains(name) {
        return Ok(());
    }
    if stack.iter().any(|s| s == name) {
        return Err(GpuError::Shader { kernel: name.to_string(), reason: format!("import cycle: {} -> {name}", stack.join(" -> ")) });
    }
    let text = source(name)?;
    stack.push(name.to_string());
    for dep in imports(text) {
        append(dep, resolve, seen, stack, out)?;
    }
    stack.pop();
    seen.insert(name.to_string());
    out.push_str(&format!("// ---- {name}.wgsl ----\n"));
    out.push_str(text);
    out.push('\n');
    Ok(())
}

/// The complete WGSL for the kernel file `name` over BabyBear with the given multiply variant
/// and constants.
pub fn compose(name: &str, variant: MulVariant, consts: &[(&str, u32)]) -> Result<String> {
    compose_for(FieldId::BabyBear, name, variant, consts)
}

/// The complete WGSL for the kernel file `name` over `field`, with the given multiply variant
/// and constants.
pub fn compose_for(field: FieldId, name: &str, variant: MulVariant, consts: &[(&str, u32)]) -> Result<String> {
    compose_over(field, ExtensionId::Degree4, name, variant, consts)
}

/// The complete WGSL for the kernel file `name` over `field` and, where it imports `field/ext`,
/// the extension `ext`, with the given multiply variant and constants (leaves, where it hashes
/// them, with the width-16 sponge).
pub fn compose_over(field: FieldId, ext: ExtensionId, name: &str, variant: MulVariant, consts: &[(&str, u32)]) -> Result<String> {
    compose_with(name, Resolve { variant, field, ext, leaf: "merkle/sponge", node: "merkle/node_poseidon2", keccak: variant.keccak_lanes() }, consts)
}

/// The complete WGSL of `kernel` over `field` and `ext` (as [`compose_over`]), its leaf sponge
/// the kernel's own (the `*24` kernels' width 24, the `*Keccak` kernels' Keccak, nodes too).
pub fn compose_kernel(field: FieldId, ext: ExtensionId, kernel: Kernel, variant: MulVariant, consts: &[(&str, u32)]) -> Result<String> {
    compose_kernel_with(field, ext, kernel, variant, variant.keccak_lanes(), consts)
}

/// [`compose_kernel`] with its Keccak lanes (where it imports `keccak/f`) as `keccak` says.
pub fn compose_kernel_with(
    field: FieldId,
    ext: ExtensionId,
    kernel: Kernel,
    variant: MulVariant,
    keccak: KeccakLanes,
    consts: &[(&str, u32)],
) -> Result<String> {
    let (leaf, node) = kernel.tree_sources();
    let resolve = Resolve { variant, field, ext, leaf, node, keccak };
    compose_with(kernel.source_name(), resolve, consts)
}

fn compose_with(name: &str, resolve: Resolve, consts: &[(&str, u32)]) -> Result<String> {
    let mut out = String::new();
    for (k, v) in consts {
        out.push_str(&format!("const {k}: u32 = {v}u;\n"));
    }
    append(name, resolve, &mut HashSet::new(), &mut Vec::new(), &mut out)?;
    Ok(out)
}

/// Where a Rust twin of a WGSL struct puts its fields: its size and the offset of each field that
/// is not padding (padding's name starts with `_`), for the layout test.
#[cfg(test)]
pub(crate) struct TwinLayout {
    pub rust: &'static str,
    pub wgsl: &'static str,
    /// The WGSL file that declares the struct (composed with its imports).
    pub source: &'static str,
    pub size: usize,
    pub fields: &'static [(&'static str, usize)],
}

/// `twin_layout!(RustType as "WgslStruct" in "wgsl/file" { field, ... })`: the twin's layout,
/// its non-padding fields listed in order.
#[cfg(test)]
macro_rules! twin_layout {
    ($rust:ident as $wgsl:literal in $source:literal { $($field:ident),* $(,)? }) => {
        crate::shaders::TwinLayout {
            rust: stringify!($rust),
            wgsl: $wgsl,
            source: $source,
            size: std::mem::size_of::<$rust>(),
            fields: &[$((stringify!($field), std::mem::offset_of!($rust, $field))),*],
        }
    };
}
#[cfg(test)]
pub(crate) use twin_layout;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every source file is a kernel's or imported by one (over some field), and every kernel's
    /// entry point is in its file.
    #[test]
    fn the_inventory_covers_every_source() {
        let mut used: HashSet<&str> = HashSet::new();
        let combinations = Kernel::ALL.into_iter().flat_map(|k| {
            MulVariant::ALL.into_iter().flat_map(move |v| FieldId::ALL.into_iter().flat_map(move |f| k.extensions().iter().map(move |&e| (k, v, f, e))))
        });
        for (kernel, variant, field, ext) in combinations {
            let text = compose_kernel(field, ext, kernel, variant, kernel.default_consts()).unwrap();
            assert!(text.contains(&format!("fn {}(", kernel.entry_point())), "{kernel:?}: no entry point {} in {}", kernel.entry_point(), kernel.source_name());
            used.extend(
                text.lines()
                    .filter_map(|l| l.strip_prefix("// ---- ").and_then(|l| l.strip_suffix(".wgsl ----")))
                    .filter_map(|n| SOURCES.iter().find(|(s, _)| *s == n).map(|(s, _)| *s)),
            );
        }
        for (name, _) in SOURCES {
            assert!(used.contains(name), "wgsl/{name}.wgsl is in SOURCES but no kernel uses it");
        }
    }

    /// Each Rust parameter struct has its WGSL twin's size and field offsets, as naga lays the
    /// WGSL out.
    #[test]
    fn rust_parameter_structs_match_their_wgsl_twins() {
        let twins = [
            crate::codeword::WGSL_TWINS,
            crate::grind::WGSL_TWINS,
            crate::keccak::WGSL_TWINS,
            crate::merkle::WGSL_TWINS,
            crate::ntt::WGSL_TWINS,
            crate::reorder::WGSL_TWINS,
            crate::row_checksum::WGSL_TWINS,
            crate::sumcheck::WGSL_TWINS,
            crate::testing::WGSL_TWINS,
        ];
        let mut checked = 0;
        for twin in twins.iter().flat_map(|t| t.iter()) {
            let consts = Kernel::ALL.iter().find(|k| k.source_name() == twin.source).map_or(&[][..], |k| k.default_consts());
            let text = compose(twin.source, MulVariant::Emulated, consts).unwrap();
            let module = naga::front::wgsl::parse_str(&text).unwrap_or_else(|e| panic!("{}: {}", twin.source, e.emit_to_string(&text)));
            let found = module.types.iter().find_map(|(_, ty)| match &ty.inner {
                naga::TypeInner::Struct { members, span } if ty.name.as_deref() == Some(twin.wgsl) => Some((members.clone(), *span)),
                _ => None,
            });
            let (members, span) = found.unwrap_or_else(|| panic!("no struct {} in wgsl/{}.wgsl", twin.wgsl, twin.source));
            assert_eq!(span as usize, twin.size, "{} is {} bytes, its WGSL twin {} {span}", twin.rust, twin.size, twin.wgsl);
            let wgsl: Vec<(String, usize)> =
                members.iter().filter_map(|m| m.name.clone().map(|n| (n, m.offset as usize))).filter(|(n, _)| !n.starts_with('_')).collect();
            let rust: Vec<(String, usize)> = twin.fields.iter().map(|(n, o)| (n.to_string(), *o)).collect();
            assert_eq!(rust, wgsl, "{} against {} in wgsl/{}.wgsl: (field, offset) differ", twin.rust, twin.wgsl, twin.source);
            checked += 1;
        }
        assert!(checked >= 20, "only {checked} twins checked");
    }
}
