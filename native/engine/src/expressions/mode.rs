//! Spark's `EvalMode`, shared by every expression whose errors depend on it.
use ember_proto as pb;

/// Spark's `EvalMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    Legacy,
    Ansi,
    Try,
}

impl From<pb::EvalMode> for Mode {
    fn from(m: pb::EvalMode) -> Self {
        match m {
            pb::EvalMode::Legacy => Mode::Legacy,
            pb::EvalMode::Ansi => Mode::Ansi,
            pb::EvalMode::Try => Mode::Try,
        }
    }
}
