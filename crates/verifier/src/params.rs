//! WHIR parameters in the user's terms, mapped onto p3-whir's `ProtocolParameters`/`WhirConfig`,
//! with infeasible settings explained in plain words and a way out.
//!
//! Every value is checked here before anything is built or allocated: the same checks guard the
//! prover's flags and the header of a proof file (which is untrusted), and the message says which
//! of the two the bad value came from.

use std::fmt;

use p3_challenger::{FieldChallenger, GrindingChallenger};
use p3_field::TwoAdicField;
use p3_whir::{FoldingFactor, ProtocolParameters, SecurityAssumption, WhirConfig, WhirConfigError};
use serde::{Deserialize, Serialize};

use crate::error::ProofError;
use crate::hash::{LeafSponge, WhirExtension, WhirField};
use crate::{EF, F};

/// Largest committed domain: BabyBear's two-adic subgroup has 2^27 elements (KoalaBear's 2^24:
/// [`Params::validate_for`]). The codeword is committed as 2^(n + rate - fold) rows, so this
/// bounds n + rate - fold, not n.
pub const MAX_DOMAIN_LOG: usize = F::TWO_ADICITY;
/// Largest number of variables: 28 (with n + rate - fold <= 27, so fold 2 or more at rate 1, as
/// p3-whir takes it), the largest
/// size proved and tested here (2^28 evaluations, 1 GiB).
pub const MAX_VARS: usize = F::TWO_ADICITY + 1;
/// Largest proof-of-work budget: a witness of either field can clear at most 30 bits (2^bits < p).
pub const MAX_POW_BITS: usize = 30;
/// Largest security target accepted at all (a degree-4 extension reaches far less; p3-whir says so).
pub const MAX_SECURITY_BITS: usize = 256;
/// Most opening points per proof. Each point adds a claim the verifier checks and a constraint
/// the prover folds in; proof files are bounded by this before anything is allocated.
pub const MAX_POINTS: usize = 256;
/// `whir prove` warns below this security level.
pub const WEAK_SECURITY_BITS: usize = 80;

/// p3-whir's configuration for the challenger `C`: over its field, with the field's degree-4
/// extension.
pub type ConfigFor<C> = WhirConfig<EF<<C as GrindingChallenger>::Witness>, <C as GrindingChallenger>::Witness, C>;

/// Reed–Solomon soundness regime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Soundness {
    /// Up to the Johnson bound (list decoding; proven).
    Johnson,
    /// Up to capacity (a conjecture).
    Capacity,
    /// Unique decoding (proven; more queries).
    Unique,
}

impl Soundness {
    /// p3-whir's name for the regime.
    pub fn assumption(self) -> SecurityAssumption {
        match self {
            Soundness::Johnson => SecurityAssumption::JohnsonBound,
            Soundness::Capacity => SecurityAssumption::CapacityBound,
            Soundness::Unique => SecurityAssumption::UniqueDecoding,
        }
    }

    /// `johnson` (`jb`), `capacity` (`cb`) or `unique` (`ud`), in any case.
    pub fn parse(s: &str) -> Result<Self, ProofError> {
        match s.to_ascii_lowercase().as_str() {
            "johnson" | "jb" => Ok(Soundness::Johnson),
            "capacity" | "cb" => Ok(Soundness::Capacity),
            "unique" | "ud" => Ok(Soundness::Unique),
            _ => Err(ProofError::Params(format!("unknown soundness {s:?}; use johnson, capacity or unique"))),
        }
    }

    /// What a security level in this regime rests on, for messages: the Johnson bound and
    /// unique decoding are proven list-/unique-decoding bounds of Reed–Solomon codes; the
    /// capacity bound is a conjecture, so its bits are claimed, not proven.
    pub fn basis(self) -> &'static str {
        match self {
            Soundness::Johnson => "the Johnson bound (proven)",
            Soundness::Capacity => "the capacity bound (a conjecture, not a proof)",
            Soundness::Unique => "unique decoding (proven)",
        }
    }

    /// Whether the security claimed in this regime is proven.
    pub fn is_proven(self) -> bool {
        !matches!(self, Soundness::Capacity)
    }

    /// The name `--soundness` takes.
    pub fn flag_value(self) -> &'static str {
        match self {
            Soundness::Johnson => "johnson",
            Soundness::Capacity => "capacity",
            Soundness::Unique => "unique",
        }
    }
}

/// Where a set of parameters came from: errors name the flag to change, or say that a proof
/// file's header holds the value (and that the file, not the user, is at fault).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamSource {
    /// Command-line flags or API arguments chosen by the caller.
    Flags,
    /// The caller's flags with a table list (`--tables`), which sets the variables (the
    /// tables stacked) and the points (one a table): a way out never names `--vars` or
    /// `--points`.
    Tables,
    /// The header of a proof file being verified.
    ProofFile,
}

/// What a proof is made with; stored in every proof file. The verifier checks a proof against
/// the parameters *it* expects, never only against the ones the file claims.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Params {
    /// Number of variables n of the multilinear polynomial (2^n evaluations).
    pub num_vars: usize,
    /// Variables folded per round.
    pub fold: usize,
    /// log2 of the inverse starting code rate.
    pub log_inv_rate: usize,
    /// Target security in bits.
    pub security_bits: usize,
    /// Proof-of-work budget in bits.
    pub pow_bits: usize,
    /// The Reed–Solomon soundness regime the security rests on.
    pub soundness: Soundness,
    /// Opening points (each sampled from the transcript).
    pub points: usize,
    /// How Merkle leaves are hashed. A proof file names it in its hash id, not among the
    /// serialized parameters (files from before it read as width 16).
    #[serde(skip)]
    pub leaf: LeafSponge,
}

impl Default for Params {
    fn default() -> Self {
        Self { num_vars: 20, fold: 4, log_inv_rate: 1, security_bits: 100, pow_bits: 20, soundness: Soundness::Johnson, points: 1, leaf: LeafSponge::Width16 }
    }
}

impl fmt::Display for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-bit security ({} soundness), PoW budget {} bits, n = {} (2^{} evaluations), fold {}, rate 2^-{}, {} opening point{}",
            self.security_bits,
            self.soundness.flag_value(),
            self.pow_bits,
            self.num_vars,
            self.num_vars,
            self.fold,
            self.log_inv_rate,
            self.points,
            if self.points == 1 { "" } else { "s" }
        )?;
        if self.leaf != LeafSponge::Width16 {
            write!(f, ", leaves hashed with Poseidon2 of width {}", self.leaf.width())?;
        }
        Ok(())
    }
}

/// Names a parameter the way its source spells it.
struct Namer(ParamSource);

impl Namer {
    /// `--vars 40` or `the proof file's header says vars = 40`; with tables, the variables and
    /// points are the table list's.
    fn name(&self, flag: &str, value: impl fmt::Display) -> String {
        match (self.0, flag) {
            (ParamSource::Tables, "vars") => format!("--tables, stacked to n = {value} variables,"),
            (ParamSource::Tables, "points") => format!("--tables, of {value} tables,"),
            (ParamSource::Flags | ParamSource::Tables, _) => format!("--{flag} {value}"),
            (ParamSource::ProofFile, _) => format!("the proof file's header says {flag} = {value}"),
        }
    }

    /// The way out: a suggestion for flags (`tables` where a table list sets the flag the
    /// suggestion would change); for a file, that no compatible prover writes it.
    fn fix_or(&self, hint: impl fmt::Display, tables: impl fmt::Display) -> String {
        match self.0 {
            ParamSource::Flags => format!("; {hint}"),
            ParamSource::Tables => format!("; {tables}"),
            ParamSource::ProofFile => "; no whir-wgpu prover writes such a file: it is corrupted or forged".into(),
        }
    }

    /// [`fix_or`](Self::fix_or) of a hint that holds with tables too.
    fn fix(&self, hint: impl fmt::Display) -> String {
        let hint = hint.to_string();
        self.fix_or(&hint, &hint)
    }
}

impl Params {
    /// The parameters `whir prove` and `whir verify` use when no flag is given.
    pub fn defaults() -> Self {
        Self::default()
    }

    /// What a user should be told about these parameters, proving or verifying alike: a level
    /// below [`WEAK_SECURITY_BITS`], and a level that rests on a conjecture.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.security_bits < WEAK_SECURITY_BITS {
            out.push(format!("{} bits of security is below {WEAK_SECURITY_BITS}: a proof this weak can be forged; use it for tests only", self.security_bits));
        }
        if !self.soundness.is_proven() {
            out.push(format!("the {} bits of security rest on {}; use --soundness johnson for a proven level", self.security_bits, self.soundness.basis()));
        }
        out
    }

    /// Each parameter by its flag name, with its value.
    pub(crate) fn fields(&self) -> [(&'static str, String); 8] {
        [
            ("vars", self.num_vars.to_string()),
            ("fold", self.fold.to_string()),
            ("rate", self.log_inv_rate.to_string()),
            ("security", self.security_bits.to_string()),
            ("pow-bits", self.pow_bits.to_string()),
            ("soundness", self.soundness.flag_value().to_string()),
            ("points", self.points.to_string()),
            ("leaf-width", self.leaf.width().to_string()),
        ]
    }

    /// The command-line flags that select these parameters.
    pub fn to_flags(&self) -> String {
        self.fields().iter().map(|(k, v)| format!("--{k} {v}")).collect::<Vec<_>>().join(" ")
    }

    /// The fields that differ from `other` (the expected ones), each as `name ours (expected theirs)`.
    pub fn differences(&self, other: &Params) -> Vec<String> {
        self.fields()
            .into_iter()
            .zip(other.fields())
            .filter(|((_, ours), (_, theirs))| ours != theirs)
            .map(|((name, ours), (_, theirs))| format!("{name} {ours} (expected {theirs})"))
            .collect()
    }

    /// Checks every value against what BabyBear (the largest domains of the fields supported)
    /// and p3-whir can take, before anything is built: ranges, shifts and counts. `source`
    /// decides how a bad value is named. [`validate_for`](Self::validate_for) checks them for
    /// a given field.
    pub fn validate(&self, source: ParamSource) -> Result<(), ProofError> {
        self.validate_for::<F>(source)
    }

    /// [`validate`](Self::validate) for proofs over the field `B`: its two-adic subgroup bounds
    /// the committed domain (KoalaBear's holds 2^24 rows, BabyBear's 2^27).
    pub fn validate_for<B: WhirField>(&self, source: ParamSource) -> Result<(), ProofError> {
        let n = Namer(source);
        let max_domain_log = B::TWO_ADICITY.min(MAX_DOMAIN_LOG);
        let bad = |what: String| Err(ProofError::Params(what));
        if self.num_vars == 0 || self.num_vars > MAX_VARS {
            return bad(format!(
                "{} is out of range: proofs take 1..={MAX_VARS} variables{}",
                n.name("vars", self.num_vars),
                n.fix_or(
                    "use --vars 20 (2^20 evaluations), for example",
                    format!("use fewer or smaller tables, or a smaller --fold (tables below 2^fold rows are padded to 2^fold; at most {MAX_VARS} variables stacked)")
                )
            ));
        }
        if self.fold == 0 {
            return bad(format!("{} folds nothing{}", n.name("fold", self.fold), n.fix_or("use --fold 4 (1 to --vars)", "use --fold 4, for example")));
        }
        if self.fold > self.num_vars {
            return bad(format!(
                "{} exceeds the polynomial's n = {} variables{}",
                n.name("fold", self.fold),
                self.num_vars,
                // More variables fix it only where the fold is a size proofs take.
                n.fix_or(
                    if self.fold <= MAX_VARS {
                        format!("use --fold {} or less, or --vars {} or more", self.num_vars, self.fold)
                    } else {
                        format!("use --fold {} or less (at most {MAX_VARS} with --vars {MAX_VARS})", self.num_vars)
                    },
                    format!("use --fold {} or less", self.num_vars)
                )
            ));
        }
        if self.log_inv_rate == 0 {
            return bad(format!(
                "{} is rate 1, a code without redundancy whose proximity test makes no queries{}",
                n.name("rate", self.log_inv_rate),
                n.fix("use --rate 1 (rate 1/2) or more")
            ));
        }
        // The codeword is committed with the first fold's 2^fold cosets in one row, so its
        // height 2^(n + rate - fold) must fit the field's two-adic subgroup.
        let folded_log = (self.num_vars + self.log_inv_rate.min(1 << 20)) - self.fold;
        if folded_log > max_domain_log {
            let max_rate = (max_domain_log + self.fold).saturating_sub(self.num_vars);
            let need_fold = self.num_vars + self.log_inv_rate.min(1 << 20) - max_domain_log;
            let hint = if max_rate == 0 {
                format!("use --fold {need_fold} or more")
            } else if need_fold <= self.num_vars {
                format!("use --rate {max_rate} or less, or --fold {need_fold} or more")
            } else {
                format!("use --rate {max_rate} or less")
            };
            return bad(format!(
                "{} with n = {} and fold {} needs a domain of 2^{folded_log} rows, over {}'s 2^{max_domain_log}{}",
                n.name("rate", self.log_inv_rate),
                self.num_vars,
                self.fold,
                B::NAME,
                n.fix(hint)
            ));
        }
        if self.security_bits == 0 || self.security_bits > MAX_SECURITY_BITS {
            return bad(format!(
                "{} is out of range (1..={MAX_SECURITY_BITS} bits; a degree-4 extension reaches about 100 with the Johnson bound){}",
                n.name("security", self.security_bits),
                n.fix("use --security 100")
            ));
        }
        if self.pow_bits > MAX_POW_BITS {
            return bad(format!(
                "{} is over the {MAX_POW_BITS} bits a proof-of-work witness can clear (2^bits must stay below the field's p){}",
                n.name("pow-bits", self.pow_bits),
                n.fix("use --pow-bits 20 (up to 30)")
            ));
        }
        if self.pow_bits >= self.security_bits {
            return bad(format!(
                "{} reaches the whole {}-bit security target, so WHIR would make no queries and accept anything{}",
                n.name("pow-bits", self.pow_bits),
                self.security_bits,
                n.fix(match self.security_bits.saturating_sub(1).min(20) {
                    0 => "use --pow-bits 0, or a higher --security".to_string(),
                    most => format!("use --pow-bits {most} or less"),
                })
            ));
        }
        if self.points == 0 || self.points > MAX_POINTS {
            return bad(format!(
                "{} is out of range (1..={MAX_POINTS} opening points){}",
                n.name("points", self.points),
                n.fix_or("use --points 1", format!("use at most {MAX_POINTS} tables"))
            ));
        }
        Ok(())
    }

    /// p3-whir's protocol parameters for these (a constant fold, the round rates p3-whir picks).
    pub fn protocol_parameters(&self) -> ProtocolParameters {
        ProtocolParameters {
            starting_log_inv_rate: self.log_inv_rate,
            round_log_inv_rates: Vec::new(),
            folding_factor: FoldingFactor::Constant(self.fold),
            soundness_type: self.soundness.assumption(),
            security_level: self.security_bits,
            pow_bits: self.pow_bits,
        }
    }

    /// p3-whir's configuration, or the reason it is infeasible with a suggestion. The values are
    /// the caller's own (flags); for a proof file's header use [`config_from`](Self::config_from).
    /// The field is the challenger's (`C::Witness`: BabyBear or KoalaBear), the extension its
    /// degree-4 one.
    pub fn config<C>(&self) -> Result<ConfigFor<C>, ProofError>
    where
        C: GrindingChallenger + FieldChallenger<C::Witness>,
        C::Witness: WhirField,
    {
        self.config_from(ParamSource::Flags)
    }

    /// [`config`](Self::config), naming bad values as coming from `source`.
    pub fn config_from<C>(&self, source: ParamSource) -> Result<ConfigFor<C>, ProofError>
    where
        C: GrindingChallenger + FieldChallenger<C::Witness>,
        C::Witness: WhirField,
    {
        self.config_over_from::<EF<C::Witness>, C>(source)
    }

    /// [`config`](Self::config) with the challenges in the extension `E` of the challenger's
    /// field (degree 5 or 8 for 128 bits: [`WhirExtension`]).
    pub fn config_over<E, C>(&self) -> Result<WhirConfig<E, C::Witness, C>, ProofError>
    where
        C: GrindingChallenger + FieldChallenger<C::Witness>,
        C::Witness: WhirField,
        E: WhirExtension<C::Witness>,
    {
        self.config_over_from::<E, C>(ParamSource::Flags)
    }

    /// [`config_over`](Self::config_over), naming bad values as coming from `source`.
    pub fn config_over_from<E, C>(&self, source: ParamSource) -> Result<WhirConfig<E, C::Witness, C>, ProofError>
    where
        C: GrindingChallenger + FieldChallenger<C::Witness>,
        C::Witness: WhirField,
        E: WhirExtension<C::Witness>,
    {
        self.validate_for::<C::Witness>(source)?;
        WhirConfig::new_with_initial_claims(self.num_vars, self.protocol_parameters(), self.points)
            .map_err(|e| ProofError::Params(self.explain::<C::Witness, E>(&e, source)))
    }

    fn feasible<B: WhirField, E: WhirExtension<B>>(&self) -> bool {
        self.validate_for::<B>(ParamSource::Flags).is_ok()
            && WhirConfig::<E, B, crate::StockChallenger<B>>::new_with_initial_claims(self.num_vars, self.protocol_parameters(), self.points).is_ok()
    }

    /// Changes of one flag each that make these parameters feasible, tried one by one, so every
    /// suggestion names a value that works.
    /// (With `source` [`ParamSource::Tables`], no `--points`: the tables set it.)
    fn suggestions<B: WhirField, E: WhirExtension<B>>(&self, e: &WhirConfigError, source: ParamSource) -> Vec<String> {
        let mut out = Vec::new();
        let mut try_one = |flag: &str, value: String, p: Params| {
            if p.feasible::<B, E>() {
                out.push(format!("--{flag} {value}"));
            }
        };
        if let WhirConfigError::PowBitsExceedBudget { required, .. } = e {
            if *required <= MAX_POW_BITS && *required < self.security_bits {
                try_one("pow-bits", required.to_string(), Params { pow_bits: *required, ..self.clone() });
            }
        }
        if let Some(s) = (1..self.security_bits).rev().find(|&s| Params { security_bits: s, ..self.clone() }.feasible::<B, E>()) {
            try_one("security", s.to_string(), Params { security_bits: s, ..self.clone() });
        }
        for soundness in [Soundness::Johnson, Soundness::Unique] {
            if soundness != self.soundness {
                try_one("soundness", soundness.flag_value().into(), Params { soundness, ..self.clone() });
            }
        }
        if let Some(k) = (1..self.points).rev().filter(|_| source != ParamSource::Tables).find(|&k| Params { points: k, ..self.clone() }.feasible::<B, E>()) {
            try_one("points", k.to_string(), Params { points: k, ..self.clone() });
        }
        if let Some(r) = (1..=8).map(|d| self.log_inv_rate + d).find(|&r| Params { log_inv_rate: r, ..self.clone() }.feasible::<B, E>()) {
            try_one("rate", r.to_string(), Params { log_inv_rate: r, ..self.clone() });
        }
        // Past what a degree-4 extension reaches, the larger extensions do.
        if E::DIMENSION == 4 && self.security_bits > 100 && self.feasible::<B, B::Ext8>() {
            out.push(format!("--extension 8 (challenges in {}^8, which reaches 128 bits)", B::NAME));
        }
        out
    }

    fn explain<B: WhirField, E: WhirExtension<B>>(&self, e: &WhirConfigError, source: ParamSource) -> String {
        let suggestions = self.suggestions::<B, E>(e, source);
        let hint = if suggestions.is_empty() {
            let defaults = Params::defaults();
            let flags: Vec<String> = defaults
                .fields()
                .iter()
                .filter(|(k, _)| source != ParamSource::Tables || (*k != "vars" && *k != "points"))
                .map(|(k, v)| format!("--{k} {v}"))
                .collect();
            format!("no single flag fixes this; try the defaults ({})", flags.join(" "))
        } else {
            format!("use {}", suggestions.join(", or "))
        };
        let what = match source {
            ParamSource::Flags | ParamSource::Tables => "infeasible parameters",
            ParamSource::ProofFile => "the proof file's header holds infeasible parameters",
        };
        let values: Vec<String> = self.fields().iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{what} {}: {e}{}", values.join(" "), Namer(source).fix(hint))
    }
}

/// A configuration asked for by name (`whir prove --config NAME`): the field, the extension of
/// the challenges, the soundness regime, the security level and the proof-of-work budget. The
/// shape (n, fold, rate, points) stays the caller's; p3-whir still checks every combination and
/// says why one is infeasible. Nodes compress with Poseidon2 of width 16 over the field; leaves
/// hash with width 16 or, as p3-whir's KoalaBear benchmark, 24 (`leaf`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NamedConfig {
    /// What `--config` takes.
    pub name: &'static str,
    /// The field's name (`babybear`, `koalabear`: `WhirField::NAME`).
    pub field: &'static str,
    /// The extension's degree (4, 5 or 8).
    pub degree: usize,
    /// The soundness regime.
    pub soundness: Soundness,
    /// The security level, in bits.
    pub security_bits: usize,
    /// The proof-of-work budget, in bits.
    pub pow_bits: usize,
    /// How its Merkle leaves are hashed.
    pub leaf: LeafSponge,
    /// Who uses it, in a few words.
    pub about: &'static str,
}

/// The named configurations, the default first.
pub const NAMED_CONFIGS: &[NamedConfig] = &[
    NamedConfig {
        name: "babybear4",
        field: "babybear",
        degree: 4,
        soundness: Soundness::Johnson,
        security_bits: 100,
        pow_bits: 20,
        leaf: LeafSponge::Width16,
        about: "the default; OpenVM's and RISC Zero's field",
    },
    NamedConfig {
        name: "koalabear4",
        field: "koalabear",
        degree: 4,
        soundness: Soundness::Johnson,
        security_bits: 100,
        pow_bits: 20,
        leaf: LeafSponge::Width16,
        about: "SP1 Hypercube's field and extension",
    },
    NamedConfig {
        name: "koalabear8-128",
        field: "koalabear",
        degree: 8,
        soundness: Soundness::Capacity,
        security_bits: 128,
        pow_bits: 20,
        leaf: LeafSponge::Width24,
        about: "p3-whir's own KoalaBear benchmark (benches/whir_pcs.rs: Poseidon2-24 leaves, Poseidon2-16 nodes, the capacity bound; fold 4, rate 1)",
    },
    NamedConfig {
        name: "babybear8-128",
        field: "babybear",
        degree: 8,
        soundness: Soundness::Johnson,
        security_bits: 128,
        pow_bits: 20,
        leaf: LeafSponge::Width16,
        about: "128 bits under a proven bound over BabyBear",
    },
    NamedConfig {
        name: "babybear5-128",
        field: "babybear",
        degree: 5,
        soundness: Soundness::Unique,
        security_bits: 128,
        pow_bits: 20,
        leaf: LeafSponge::Width16,
        about: "128 bits by unique decoding over BabyBear's quintic extension",
    },
    NamedConfig {
        name: "koalabear5-128",
        field: "koalabear",
        degree: 5,
        soundness: Soundness::Johnson,
        security_bits: 128,
        pow_bits: 20,
        leaf: LeafSponge::Width16,
        about: "KoalaBear's quintic trinomial extension at its best proven level (leanMultisig's extension)",
    },
];

/// The named configuration `name`, or an error listing them.
pub fn named_config(name: &str) -> Result<&'static NamedConfig, String> {
    NAMED_CONFIGS.iter().find(|c| c.name == name).ok_or_else(|| {
        let names: Vec<&str> = NAMED_CONFIGS.iter().map(|c| c.name).collect();
        format!("{name:?} is not a named configuration: use one of {}", names.join(", "))
    })
}

impl NamedConfig {
    /// The extension's name, as `WhirExtension::NAME` and proof files give it (`koalabear^8`).
    pub fn extension(&self) -> String {
        format!("{}^{}", self.field, self.degree)
    }
}
