//! Spark-compatible scalar expressions: where DataFusion's own expressions differ from Spark's semantics
//! (evaluation order and laziness under ANSI errors, float equality, overflow, casts), Ember has its own.
pub mod arithmetic;
pub mod cast;
pub mod coalesce;
pub mod decimal_sum_avg;
pub mod first_error;
pub mod float_min_max;
pub mod functions;
pub mod hash;
pub mod jvm;
pub mod logical;
pub mod mode;
pub mod nondeterministic;
pub mod normalize;
pub mod query_context;
pub mod sum_avg;
pub mod text;
pub mod unscaled;
pub mod zone;

#[cfg(test)]
pub(crate) mod test_util;

pub use coalesce::CoalesceExpr;
pub use first_error::{FirstErrorExpr, RowPipeline};
pub use functions::FunctionExpr;
pub use hash::{HashExpr, HashFunction};
pub use logical::{LazyLogicalExpr, LogicalOp};
pub use mode::Mode;
pub use normalize::NormalizeFloatExpr;
pub use query_context::QueryContextExpr;
pub use unscaled::{MakeDecimalExpr, UnscaledValueExpr};
