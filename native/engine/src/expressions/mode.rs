//! Spark's `EvalMode`, shared by every expression whose errors depend on it.

/// Spark's `EvalMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    Legacy,
    Ansi,
    Try,
}
