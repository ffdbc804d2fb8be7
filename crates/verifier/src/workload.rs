//! Multi-table workloads: tables of given heights and widths, opened as a STARK's outer
//! protocol opens its trace (every column at one transcript point per table, and the successor
//! views of half of them), from a spec or a preset shaped like a zkVM trace. A multi-table proof
//! file names its tables as declared, and the prover observes that list in the transcript
//! before the commitment (as a Plonky3 STARK observes its instance's trace heights before its
//! commitment: the PCS pads tables below the first fold, so the padded shapes alone would not
//! tell a 2^3-row table from a 2^4-row one), so a file whose list was rewritten fails
//! verification; the verifier rebuilds the opening protocol from the list.
//!
//! A table list read from a file is untrusted: every bound below is checked before anything is
//! built from it, and the bounds keep what a verifier builds (p3-sumcheck's table specs check a
//! batch's columns pairwise, so a table costs the verifier its width squared) small whatever a
//! header claims.

use p3_challenger::FieldChallenger;
use p3_field::Field;
use p3_sumcheck::layout::plan_stacked_layout;
use p3_sumcheck::{OpeningBatch, OpeningProtocol, TableShape, TableSpec};

use crate::error::ProofError;
use crate::{Params, MAX_POINTS};

/// A zkVM-shaped trace of 2^24 cells: 20 tables, heights 2^10 to 2^22, widths 1 to 64.
pub const ZKVM_PRESET: &str = "22x2,21x1,20x2,19x3,18x4,17x4,2*16x3,2*15x4,2*14x5,3*13x4,4*12x4,10x64";
/// The same shape at 2^16 cells (tables under the first fold are padded to it).
pub const ZKVM_SMALL_PRESET: &str = "14x2,13x1,12x2,11x3,10x4,9x4,2*8x3,2*7x4,2*6x5,3*5x4,4*4x4,2x64";

/// Most tables a list may name: each is opened at a point of its own, and a proof opens at most
/// [`MAX_POINTS`].
pub const MAX_TABLES: usize = MAX_POINTS;
/// Most columns of one table (a wide AIR such as Keccak-f's has some 2,600).
pub const MAX_WIDTH: usize = 1 << 12;
/// Most columns of all tables together.
pub const MAX_COLUMNS: usize = 1 << 16;
/// Most variables of one table.
const MAX_TABLE_VARS: usize = crate::MAX_VARS;

/// Tables as (variables, columns).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    /// Each table's variables (2^v rows) and columns, in the order they are committed and opened.
    pub tables: Vec<(usize, usize)>,
}

impl Workload {
    /// Most evaluations one table's batch returns: every column of the widest table and the
    /// successor views of half of them.
    pub const MAX_EVALUATIONS_PER_TABLE: usize = MAX_WIDTH + MAX_WIDTH / 2;

    /// `zkvm`, `zkvm-small`, or a comma-separated list of tables `VARSxCOLUMNS` (2^VARS rows),
    /// each optionally repeated as `COUNT*VARSxCOLUMNS`: e.g. `22x2,3*12x20`. Every bound of
    /// [`check`](Self::check) holds of what it returns; nothing is allocated past them.
    pub fn parse(spec: &str) -> Result<Self, ProofError> {
        let spec = match spec.trim() {
            "zkvm" => ZKVM_PRESET,
            "zkvm-small" => ZKVM_SMALL_PRESET,
            other => other,
        };
        let bad = |what: &str, why: String| {
            ProofError::Params(format!(
                "table spec {what:?}: {why} (expected e.g. `22x2,3*12x20`: VARSxCOLUMNS, optionally COUNT*, or a preset: zkvm, zkvm-small)"
            ))
        };
        let mut tables = Vec::new();
        let mut columns = 0usize;
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (count, table) = match item.split_once('*') {
                Some((c, t)) => (c.trim().parse::<usize>().map_err(|e| bad(item, format!("count: {e}")))?, t.trim()),
                None => (1, item),
            };
            let (vars, width) = table.split_once('x').ok_or_else(|| bad(item, "no `x` between variables and columns".into()))?;
            let vars: usize = vars.trim().parse().map_err(|e| bad(item, format!("variables: {e}")))?;
            let width: usize = width.trim().parse().map_err(|e| bad(item, format!("columns: {e}")))?;
            if vars > MAX_TABLE_VARS || width == 0 || width > MAX_WIDTH || count == 0 {
                return Err(bad(item, format!("need 1 to {MAX_WIDTH} columns, at most {MAX_TABLE_VARS} variables and a count of at least 1")));
            }
            // (Compared before anything is added or allocated: a count may be any usize.)
            if count > MAX_TABLES - tables.len() {
                return Err(bad(item, format!("more than {MAX_TABLES} tables (a proof opens at most {MAX_POINTS} points, one a table)")));
            }
            columns += count * width;
            if columns > MAX_COLUMNS {
                return Err(bad(item, format!("more than {MAX_COLUMNS} columns in all")));
            }
            tables.extend(std::iter::repeat_n((vars, width), count));
        }
        if tables.is_empty() {
            return Err(bad(spec, "no tables".into()));
        }
        let workload = Self { tables };
        if workload.cells() > 1 << crate::MAX_VARS {
            return Err(bad(spec, format!("{} cells, more than a proof of at most {} variables holds", workload.cells(), crate::MAX_VARS)));
        }
        Ok(workload)
    }

    /// Checks tables that did not come from [`parse`](Self::parse) (a proof file's) against
    /// the same bounds: 1 to [`MAX_TABLES`] tables, 1 to [`MAX_WIDTH`] columns and at most 28
    /// variables each, at most [`MAX_COLUMNS`] columns and 2^28 cells in all. Time linear in
    /// the list, nothing allocated.
    pub fn check(&self) -> Result<(), ProofError> {
        let bad = |why: String| Err(ProofError::Params(format!("a table list {why}")));
        if self.tables.is_empty() || self.tables.len() > MAX_TABLES {
            return bad(format!("of {} tables (1 to {MAX_TABLES} are allowed)", self.tables.len()));
        }
        if let Some((i, &(v, w))) = self.tables.iter().enumerate().find(|(_, &(v, w))| v > MAX_TABLE_VARS || w == 0 || w > MAX_WIDTH) {
            return bad(format!("whose table {i} has {w} columns of 2^{v} rows (1 to {MAX_WIDTH} columns and at most {MAX_TABLE_VARS} variables are allowed)"));
        }
        if self.columns() > MAX_COLUMNS {
            return bad(format!("of {} columns (at most {MAX_COLUMNS} are allowed)", self.columns()));
        }
        if self.cells() > 1 << crate::MAX_VARS {
            return bad(format!("of {} cells (at most 2^{} are allowed)", self.cells(), crate::MAX_VARS));
        }
        Ok(())
    }

    /// The spec [`parse`](Self::parse) reads back as these tables (runs of equal tables
    /// counted).
    pub fn spec(&self) -> String {
        let mut items: Vec<(usize, (usize, usize))> = Vec::new();
        for &t in &self.tables {
            match items.last_mut() {
                Some((count, last)) if *last == t => *count += 1,
                _ => items.push((1, t)),
            }
        }
        items.iter().map(|&(c, (v, w))| if c == 1 { format!("{v}x{w}") } else { format!("{c}*{v}x{w}") }).collect::<Vec<_>>().join(",")
    }

    /// Observes the list on `challenger`: the number of tables, then each table's variables
    /// (as declared, before the witness pads it to the first fold) and columns. The outer
    /// protocol's binding of its instance before the commitment is observed, as Plonky3's
    /// STARKs observe their traces' heights: a multi-table proof file's prover calls this
    /// before `commit`, and the verifier before `verify`, so no rewrite of a height, a width or
    /// the order verifies.
    pub fn observe<F: Field, C: FieldChallenger<F>>(&self, challenger: &mut C) {
        challenger.observe(F::from_usize(self.tables.len()));
        for &(v, w) in &self.tables {
            challenger.observe(F::from_usize(v));
            challenger.observe(F::from_usize(w));
        }
    }

    /// Evaluations one opening of this workload returns: every column and the successor views
    /// of half of them, per table.
    pub fn num_evaluations(&self) -> usize {
        self.tables.iter().map(|&(_, w)| Self::evaluations_of(w)).sum()
    }

    /// Evaluations of one table of `width` columns: each column, and the successor views of
    /// half of them (rounded up).
    pub fn evaluations_of(width: usize) -> usize {
        width + width.div_ceil(2)
    }

    /// Columns of all tables.
    pub fn columns(&self) -> usize {
        self.tables.iter().map(|&(_, w)| w).sum()
    }

    /// The tables' shapes once the witness pads them to the first fold.
    pub fn shapes(&self, fold: usize) -> Vec<TableShape> {
        self.tables.iter().map(|&(v, w)| TableShape::new(v.max(fold), w)).collect()
    }

    /// Variables of the stacked polynomial; `fold` must be at most 28 (a [`Params`] that
    /// validates).
    pub fn num_variables(&self, fold: usize) -> usize {
        plan_stacked_layout(&self.shapes(fold)).0
    }

    /// Cells of the tables (before padding).
    pub fn cells(&self) -> u64 {
        self.tables.iter().map(|&(v, w)| (w as u64) << v.min(63)).sum()
    }

    /// One batch per table at a transcript point: every column, and the successor views of the
    /// first half of them (at least one).
    pub fn protocol(&self, fold: usize) -> OpeningProtocol {
        let specs = self
            .tables
            .iter()
            .map(|&(v, w)| TableSpec::new(TableShape::new(v, w), vec![OpeningBatch::new((0..w).collect(), (0..w.div_ceil(2)).collect())]))
            .collect();
        OpeningProtocol::new(specs).pad_to_min_num_variables(fold)
    }

    /// `base` (fold, rate, security) sized for this workload: its stacked variables, one
    /// opening batch per table. `base.fold` must be at most 28; [`params_checked`](Self::params_checked)
    /// checks it.
    pub fn params(&self, base: &Params) -> Params {
        Params { num_vars: self.num_variables(base.fold), points: self.tables.len(), ..base.clone() }
    }

    /// An error unless a table list can be laid out at `fold` (1 to 28): checked before any
    /// layout is planned, since the tables, not the flags, set the variables.
    pub fn check_fold(fold: usize) -> Result<(), ProofError> {
        if fold == 0 || fold > crate::MAX_VARS {
            return Err(ProofError::Params(format!(
                "--fold {fold} is out of range for tables: proofs fold 1 to {} variables a round; use --fold 4, for example",
                crate::MAX_VARS
            )));
        }
        Ok(())
    }

    /// [`params`](Self::params), with the fold checked first (a table list sets the variables,
    /// so a fold past 28 is refused here, before any layout is planned) and the result
    /// validated as parameters from `--tables`.
    pub fn params_checked(&self, base: &Params) -> Result<Params, ProofError> {
        Self::check_fold(base.fold)?;
        let params = self.params(base);
        params.validate(crate::ParamSource::Tables)?;
        Ok(params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_and_presets_parse() {
        assert_eq!(Workload::parse("22x2, 3*12x20").unwrap().tables, vec![(22, 2), (12, 20), (12, 20), (12, 20)]);
        let zkvm = Workload::parse("zkvm").unwrap();
        assert_eq!((zkvm.tables.len(), zkvm.cells(), zkvm.num_variables(4)), (20, 1 << 24, 24));
        assert_eq!(Workload::parse("zkvm-small").unwrap().tables.len(), 20);
        // One opening batch per table, every column and half of the successor views.
        let protocol = Workload::parse("4x3").unwrap().protocol(2);
        let (_, batch) = protocol.iter_openings().next().unwrap();
        assert_eq!((batch.current(), batch.next()), (&[0, 1, 2][..], &[0, 1][..]));
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        let zkvm = Workload::parse("zkvm").unwrap();
        assert_eq!(Workload::parse(&zkvm.spec()).unwrap(), zkvm);
        assert!(zkvm.check().is_ok());
        for (tables, says) in [
            (vec![], "of 0 tables"),
            (vec![(29, 1)], "table 0 has 1 columns of 2^29"),
            (vec![(4, 0)], "0 columns"),
            (vec![(28, 2)], "cells"),
            (vec![(0, 65536); 256], "65536 columns"),
            (vec![(2, 1); 257], "of 257 tables"),
            (vec![(2, 4096); 17], "69632 columns"),
        ] {
            let err = Workload { tables }.check().unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
        for (spec, says) in [
            ("", "no tables"),
            ("12", "no `x`"),
            ("12xq", "columns"),
            ("ax2", "variables"),
            ("0*4x2", "count"),
            ("29x1", "at most 28 variables"),
            ("4x0", "1 to"),
            ("5000*2x1", "more than 256 tables"),
            ("257*2x1", "more than 256 tables"),
            ("1x1,18446744073709551615*2x1", "more than 256 tables"),
            ("99999999999999999999*2x1", "count"),
            ("2x4097", "1 to 4096"),
            ("17*4x4096", "more than 65536 columns"),
            ("16*28x4096", "cells"),
        ] {
            let err = Workload::parse(spec).unwrap_err().to_string();
            assert!(err.contains(says) && err.contains("expected e.g."), "{spec:?}: {err}");
        }
    }

    /// The observed list is the declared one: heights the PCS pads alike, widths and orders
    /// give other transcripts.
    #[test]
    fn the_observed_list_tells_every_shape_apart() {
        use p3_baby_bear::BabyBear;
        use p3_challenger::{CanSample, DuplexChallenger};
        let draw = |spec: &str| {
            let mut c = DuplexChallenger::<BabyBear, crate::hash::Perm, 16, 8>::new(crate::permutation());
            Workload::parse(spec).unwrap().observe(&mut c);
            CanSample::<BabyBear>::sample(&mut c)
        };
        let specs = ["6x2,3*4x3", "6x2,3x3,2*4x3", "6x2,0x3,2*4x3", "6x2,4x3,4x3,4x4", "4x3,6x2,2*4x3", "6x2,2*4x3"];
        let draws: Vec<_> = specs.iter().map(|s| draw(s)).collect();
        for i in 0..specs.len() {
            assert_eq!(draws[i], draw(specs[i]));
            for j in 0..i {
                assert_ne!(draws[i], draws[j], "{} and {}", specs[i], specs[j]);
            }
        }
    }
}
