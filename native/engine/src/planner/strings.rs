//! Spark's strings as bytes. Spark's `UTF8String` holds any bytes, Arrow's `Utf8` only valid UTF-8: a plan whose
//! operators and expressions only move, compare, hash, group, join and sort its strings (what Spark does with
//! their bytes, unsigned byte order included) carries them as Arrow `Binary`, so that invalid UTF-8 gets Spark's
//! answers instead of failing the task at the plan's inputs. A plan that reads or makes text (a string function,
//! a cast to or from a string, a JVM expression over strings) keeps `Utf8`, validated where it enters.
//!
//! The engine decides per plan, by planning it once with every `UTF8` type and literal as `Binary`
//! ([`as_bytes`]): the kernels that read text refuse that ([`refuse_text`]), and so does any operator that does
//! not support binary values. The plan's inputs then decode strings as `Binary` without validating them
//! ([`crate::unsafe_row::conform_strings`]); outputs reach the JVM and other plans as `Binary`, which they read
//! as Spark's strings.
use std::sync::Arc;

use datafusion_common::Result;
use ember_proto as pb;

use super::expr::{with_plan_context, PlanContext};
use crate::error::plan_error;

/// Whether `plan` carries Spark's strings as `Binary`: it reads strings and plans (output types included) with
/// them as bytes. The same answer for every task of the plan (it depends on the plan alone).
pub fn as_bytes(plan: &pb::Plan) -> bool {
    let Some(root) = plan.root.as_ref() else { return false };
    let config = plan.config.clone().unwrap_or_default();
    if !config.strings_as_bytes.unwrap_or(true) || !reads_strings(root) {
        return false;
    }
    let context = PlanContext { jdk_feature: config.jdk_feature, partition_index: 0, strings_as_bytes: true };
    with_plan_context(context, || -> Result<()> {
        let root = super::dry_run(root)?;
        let expected = plan.output_schema.as_ref().ok_or_else(|| plan_error("plan without an output schema"))?;
        crate::execution::check_output_types(&root, &Arc::new(super::types::to_arrow_schema(expected)?))
    })
    .is_ok()
}

/// Whether one of the plan's inputs has a string column.
pub(super) fn reads_strings(op: &pb::Operator) -> bool {
    let own = match &op.kind {
        Some(pb::operator::Kind::Input(input)) => input
            .schema
            .as_ref()
            .is_some_and(|s| s.fields.iter().any(|f| f.r#type.as_ref().is_some_and(mentions_string))),
        _ => false,
    };
    own || op.children.iter().any(reads_strings)
}

fn mentions_string(t: &pb::DataType) -> bool {
    t.id == pb::TypeId::Utf8 as i32 || t.element.as_deref().is_some_and(mentions_string)
}

/// The Spark type of `e`'s result where it can be a string (None: a type that never is: booleans, numbers).
fn result_type(e: &pb::Expr) -> Option<&pb::DataType> {
    use pb::expr::Kind;
    match e.kind.as_ref()? {
        Kind::Column(c) => c.r#type.as_ref(),
        Kind::Literal(l) => l.r#type.as_ref(),
        Kind::ScalarFunction(f) => f.return_type.as_ref(),
        Kind::Cast(c) => c.to.as_ref(),
        Kind::CaseWhen(c) => c.result_type.as_ref(),
        Kind::Coalesce(c) => c.result_type.as_ref(),
        Kind::Jvm(j) => j.result_type.as_ref(),
        _ => None,
    }
}

/// In a plan carrying strings as bytes, `what` (a function, cast or JVM expression) may neither read nor make a
/// string: it would see `Binary`, whose functions (a byte length, a byte substring) are not the string ones.
pub(super) fn refuse_text(what: &str, result: Option<&pb::DataType>, args: &[&pb::Expr]) -> Result<()> {
    if !super::expr::strings_as_bytes() {
        return Ok(());
    }
    let text = result.is_some_and(mentions_string) || args.iter().any(|a| result_type(a).is_some_and(mentions_string));
    if text {
        return Err(plan_error(format!("{what} reads or makes text, so the plan keeps strings as UTF-8")));
    }
    Ok(())
}
