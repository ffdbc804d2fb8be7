//! Where a driven proof spends its time: the steps of a round ([`Step`]), the per-round
//! breakdown ([`RoundBreakdown`], wall time and GPU time per step; the protocol's `StepClock`
//! records it), and its sums ([`DriverTimes`]).

use std::time::Duration;

/// The steps of a WHIR round, as the per-round breakdown names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    /// Encode + Merkle commit (upload, NTT, tree, root).
    Commit,
    /// Claim phase: evaluations at the commitment OOD and opening points.
    Claims,
    /// Out-of-domain answers of the folded polynomial.
    Ood,
    /// Proof-of-work grinding (query PoW, and sumcheck PoW moved here from its rounds).
    Pow,
    /// Gathering the opened rows and paths (deferred on the GPU).
    Open,
    /// The round's constraint weights (equality and select).
    Weights,
    /// Sumcheck rounds: round polynomials, challenges, folds; the final polynomial's readback.
    Sumcheck,
    /// Reading every opening back at the proof's end.
    Readback,
}

impl Step {
    /// Every step, in the order a round enters them.
    pub const ALL: [Step; 8] = [Step::Commit, Step::Claims, Step::Ood, Step::Pow, Step::Open, Step::Weights, Step::Sumcheck, Step::Readback];

    /// The step's name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Step::Commit => "commit",
            Step::Claims => "claims",
            Step::Ood => "ood",
            Step::Pow => "pow",
            Step::Open => "open",
            Step::Weights => "weights",
            Step::Sumcheck => "sumcheck",
            Step::Readback => "readback",
        }
    }
}

/// The profile label of a step: "round:step".
pub fn step_label(round: usize, step: Step) -> String {
    format!("{round}:{}", step.name())
}

/// Time of one step of one round: wall time on the host, and GPU time (the sum of its
/// submissions' timestamps) where the adapter has timestamp queries.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepTime {
    /// Wall time on the host.
    pub wall: Duration,
    /// GPU time of the step's submissions, where profiled.
    pub gpu: Option<Duration>,
    /// Submissions the step made.
    pub submissions: u32,
}

/// Per-round breakdown of a driven proof: round 0 is the commitment, the claim phase and the
/// initial fold; rounds 1..=R are WHIR's rounds; the last is the final round.
#[derive(Clone, Debug, Default)]
pub struct RoundBreakdown {
    /// Each round's steps, in the order entered.
    pub rounds: Vec<Vec<(Step, StepTime)>>,
}

impl RoundBreakdown {
    /// One step's time summed over rounds.
    pub fn total(&self, step: Step) -> StepTime {
        let mut t = StepTime::default();
        for (s, v) in self.rounds.iter().flatten() {
            if *s == step {
                t.wall += v.wall;
                t.submissions += v.submissions;
                if let Some(g) = v.gpu {
                    t.gpu = Some(t.gpu.unwrap_or_default() + g);
                }
            }
        }
        t
    }

    /// Fills in GPU times from a device profile's spans (label, GPU time, submissions), labelled
    /// by [`step_label`]; a label with a "/pow" suffix (GPU grinding inside a step, e.g. a
    /// sumcheck's) counts as that round's PoW.
    pub fn add_gpu<'a>(&mut self, spans: impl IntoIterator<Item = (&'a str, Duration, u32)>) {
        for (_, time) in self.rounds.iter_mut().flatten() {
            time.gpu = Some(Duration::ZERO);
            time.submissions = 0;
        }
        for (label, gpu, submissions) in spans {
            let Some((round, step)) = parse_label(label) else { continue };
            if self.rounds.len() <= round {
                self.rounds.resize(round + 1, Vec::new());
            }
            let steps = &mut self.rounds[round];
            let at = match steps.iter().position(|(s, _)| *s == step) {
                Some(i) => i,
                None => {
                    steps.push((step, StepTime { gpu: Some(Duration::ZERO), ..StepTime::default() }));
                    steps.len() - 1
                }
            };
            let time = &mut steps[at].1;
            time.gpu = Some(time.gpu.unwrap_or_default() + gpu);
            time.submissions += submissions;
        }
    }
}

/// (round, step) of a profile label made by [`step_label`], possibly with a "/pow" suffix.
fn parse_label(label: &str) -> Option<(usize, Step)> {
    let (round, rest) = label.split_once(':')?;
    let (name, sub) = match rest.split_once('/') {
        Some((name, sub)) => (name, Some(sub)),
        None => (rest, None),
    };
    let step = match sub {
        Some("pow") => Step::Pow,
        Some(_) => return None,
        None => *Step::ALL.iter().find(|s| s.name() == name)?,
    };
    Some((round.parse().ok()?, step))
}

/// Where a driven proof spent its time: the per-round breakdown and its sums.
#[derive(Clone, Debug, Default)]
pub struct DriverTimes {
    /// Encode + commit of every codeword (upload, NTT, Merkle tree, root readback).
    pub commit: Duration,
    /// Row and path openings.
    pub open: Duration,
    /// Proof-of-work grinding (query and sumcheck PoW).
    pub pow: Duration,
    /// Everything else: claim phase, sumcheck and folding, OOD evaluations, transcript.
    pub other: Duration,
    /// Until the commitment is bound (the PCS `commit` phase).
    pub commit_phase: Duration,
    /// Claim phase (evaluations at the opening and OOD points) and the initial fold.
    pub claims: Duration,
    /// Constraint weights and sumcheck rounds of every round after the initial fold.
    pub sumcheck: Duration,
    /// Out-of-domain evaluations of the folded polynomials.
    pub ood: Duration,
    /// Every step of every round.
    pub breakdown: RoundBreakdown,
    /// Out-of-domain answers computed before their commit's wait (the round's head played
    /// where f lies), out of all the rounds' answers.
    pub head_answers: usize,
    /// Query grinds run on the GPU ahead of the transcript and offered to the challenger (it
    /// takes each only if its state is the one searched): each round's with its commit, the
    /// final one with the final polynomial's readback.
    pub head_grinds: usize,
}

impl DriverTimes {
    pub(crate) fn from_breakdown(breakdown: RoundBreakdown, commit_phase: Duration, total: Duration, (head_answers, head_grinds): (usize, usize)) -> Self {
        let wall = |step| breakdown.total(step).wall;
        let (commit, open, pow) = (wall(Step::Commit), wall(Step::Open) + wall(Step::Readback), wall(Step::Pow));
        let initial = |step| breakdown.rounds.first().and_then(|r| r.iter().find(|(s, _)| *s == step)).map_or(Duration::ZERO, |(_, t)| t.wall);
        let claims = wall(Step::Claims) + initial(Step::Weights) + initial(Step::Sumcheck);
        let sumcheck = wall(Step::Weights) + wall(Step::Sumcheck) - initial(Step::Weights) - initial(Step::Sumcheck);
        Self {
            commit,
            open,
            pow,
            other: total.saturating_sub(commit + open + pow),
            commit_phase,
            claims,
            sumcheck,
            ood: wall(Step::Ood),
            breakdown,
            head_answers,
            head_grinds,
        }
    }
}
