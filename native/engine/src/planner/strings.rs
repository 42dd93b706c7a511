//! Spark's strings as bytes. Spark's `UTF8String` holds any bytes, Arrow's `Utf8` only valid UTF-8: a plan
//! carries Spark's strings as Arrow `Binary` where its operators and expressions only move, compare, hash, group,
//! join and sort them (what Spark does with their bytes, unsigned byte order included), or read them as text
//! through a `Text` expression ([`text_expr`]: the native kernels over a batch whose strings are valid UTF-8,
//! Spark's own expression on the JVM over one that holds invalid bytes). Either way invalid UTF-8 gets Spark's
//! answers instead of failing the task where it enters the plan. A plan with a function or cast reading text
//! outside a `Text` (the JVM sends none where Spark's twin cannot run) keeps `Utf8`, validated where it enters.
//!
//! Strings made inside the plan are the same: `CAST(binary AS STRING)` relabels the bytes ([`cast_from_bytes`]),
//! a JVM expression writes its strings back as bytes; inside a `Text` they are checked where they are made and a
//! batch holding invalid UTF-8 goes to the twin. A plan that keeps `Utf8` refuses `CAST(binary AS STRING)`, so
//! a plan holding one is carried as bytes or its operator stays in Spark.
//!
//! The engine decides per plan, by planning it once with every `UTF8` type and literal as `Binary`
//! ([`as_bytes`], for every plan, since any can make strings): the kernels that read text outside a `Text`
//! refuse that ([`refuse_text`]), and so does any operator that does not support binary values. The plan's
//! inputs then decode strings as `Binary` without validating them ([`crate::unsafe_row::conform_strings`]);
//! outputs reach the JVM and other plans as `Binary`, which they read as Spark's strings.
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};
use datafusion_common::Result;
use ember_proto as pb;

use super::expr::{create_expr, plan_context, strings_as_bytes, with_plan_context, PhysicalExprRef, PlanContext};
use super::types::to_arrow_type;
use crate::error::plan_error;
use crate::expressions::functions::FunctionExpr;
use crate::expressions::jvm::JvmKernel;
use crate::expressions::text::{TextFromBytes, TextKernel};

/// Whether `plan` carries Spark's strings as `Binary`: it plans (output types included) with them as bytes. The
/// same answer for every task of the plan (it depends on the plan alone). Asked of every plan, whether its
/// inputs have strings or not: an expression can make strings (of any bytes) from other types; a plan without
/// strings plans the same either way.
pub fn as_bytes(plan: &pb::Plan) -> bool {
    let Some(root) = plan.root.as_ref() else { return false };
    let config = plan.config.clone().unwrap_or_default();
    if !config.strings_as_bytes.unwrap_or(true) {
        return false;
    }
    let context = PlanContext { jdk_feature: config.jdk_feature, strings_as_bytes: true, ..Default::default() };
    with_plan_context(context, || -> Result<()> {
        let root = super::dry_run(root)?;
        let expected = plan.output_schema.as_ref().ok_or_else(|| plan_error("plan without an output schema"))?;
        crate::execution::check_output_types(&root, &Arc::new(super::types::to_arrow_schema(expected)?))
    })
    .is_ok()
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
        Kind::Text(t) => result_type(t.native.as_ref()?),
        _ => None,
    }
}

/// `CAST(binary AS STRING)`, whose result Spark keeps as the bytes they are, valid UTF-8 or not (None: another
/// cast). With strings as bytes, outside a `Text`, the bytes themselves (no copy, no check). In the native side of
/// a `Text` with Spark's twin, checked per batch ([`TextFromBytes`]: valid UTF-8 as `Utf8`, else the twin
/// evaluates the batch). Refused anywhere else (a plan keeping strings as `Utf8`, a `Text` without a twin): it
/// could make a string `Utf8` cannot hold, so the plan is carried as bytes or the operator stays in Spark.
pub(super) fn cast_from_bytes(c: &pb::Cast, schema: &Schema) -> Result<Option<PhysicalExprRef>> {
    let is_binary = |t: Option<&pb::DataType>| t.is_some_and(|t| t.id == pb::TypeId::Binary as i32);
    let to_string = c.to.as_ref().is_some_and(|t| t.id == pb::TypeId::Utf8 as i32);
    let Some(child) = c.child.as_deref().filter(|child| to_string && is_binary(result_type(child))) else {
        return Ok(None);
    };
    let input = create_expr(child, schema)?;
    let context = plan_context();
    if context.strings_as_bytes {
        return Ok(Some(input));
    }
    if !context.text_twin {
        return Err(plan_error(
            "CAST(binary AS STRING) may make strings that are not UTF-8, which only a plan carrying strings as \
             bytes (or an expression with Spark's twin) holds",
        ));
    }
    let kernel = Arc::new(TextFromBytes);
    Ok(Some(Arc::new(FunctionExpr::new("text_from_bytes", vec![input], DataType::Utf8, kernel))))
}

/// In a plan carrying strings as bytes, `what` (a function or cast outside a `Text`) may neither read nor make a
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

/// A `Text` expression: `native` planned over its children with Spark's strings as `Utf8` (as in a plan that
/// reads them as text), wrapped in a [`TextKernel`] that checks each batch's strings and hands a batch holding
/// invalid UTF-8 to Spark's twin. In a plan keeping strings as `Utf8` the check never fails (they were checked
/// where they entered) and the twin is left out.
pub(super) fn text_expr(t: &pb::Text, schema: &Schema) -> Result<PhysicalExprRef> {
    let expr = t.native.as_ref().ok_or_else(|| plan_error("a text expression without its expression"))?;
    if t.children.is_empty() {
        return Err(plan_error("a text expression must read at least one column"));
    }
    let bytes = strings_as_bytes();
    // With Spark's twin, a batch the native side cannot take (a string made from bytes that are not UTF-8) goes
    // to the twin.
    let twin = bytes && t.spark.is_some();
    let text_context = PlanContext { strings_as_bytes: false, text_twin: twin, ..plan_context() };
    let text_schema = with_plan_context(text_context, || -> Result<Schema> {
        let fields = t.children.iter().enumerate().map(|(i, c)| {
            let ty = result_type(c).ok_or_else(|| plan_error("a text expression reads a column of no type"))?;
            Ok(Field::new(format!("c{i}"), to_arrow_type(ty)?, true))
        });
        Ok(Schema::new(fields.collect::<Result<Vec<_>>>()?))
    })?;
    let text_schema = Arc::new(text_schema);
    // Before the children: the expression is evaluated on every row of the batch, as the operator's own
    // expression would be (a nondeterministic one reads that, and each `create_expr` clears it).
    let native = with_plan_context(text_context, || create_expr(expr, &text_schema))?;
    let args = t.children.iter().map(|c| create_expr(c, schema)).collect::<Result<Vec<_>>>()?;
    let return_type = match result_type(expr) {
        Some(ty) => to_arrow_type(ty)?,
        None => native.data_type(&text_schema)?,
    };
    let reads_strings = t.children.iter().any(|c| result_type(c).is_some_and(mentions_string));
    let spark = match (&t.spark, bytes) {
        (_, false) => None,
        (Some(j), true) => Some(JvmKernel::new(j.name.clone(), j.expression.clone(), return_type.clone())),
        (None, true) if !reads_strings => None,
        (None, true) => {
            return Err(plan_error(format!(
                "{native} reads text without Spark's expression for invalid UTF-8, so the plan keeps strings as UTF-8"
            )))
        }
    };
    let name = format!("text:{native}");
    let kernel = TextKernel::new(native, text_schema, spark, return_type.clone());
    Ok(Arc::new(FunctionExpr::new(name, args, return_type, Arc::new(kernel))))
}
