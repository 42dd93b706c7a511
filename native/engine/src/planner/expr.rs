//! Proto expressions → DataFusion physical expressions with Spark's semantics.
use std::sync::Arc;

use arithmetic::Op;
use arrow::datatypes::{DataType, Schema};
use datafusion_common::Result;
use datafusion_expr::Operator;
use datafusion_physical_expr::expressions::{
    BinaryExpr, CaseExpr, Column, InListExpr, IsNotNullExpr, IsNullExpr, Literal, NotExpr,
};
use datafusion_physical_expr::PhysicalExpr;
use ember_proto as pb;
use pb::expr::Kind;

use super::types::{required_type, to_scalar};
use crate::error::plan_error;
use crate::expressions::{
    arithmetic, cast, CoalesceExpr, HashExpr, HashFunction, LazyLogicalExpr, LogicalOp, MakeDecimalExpr, Mode,
    NormalizeFloatExpr, QueryContextExpr, UnscaledValueExpr,
};

pub type PhysicalExprRef = Arc<dyn PhysicalExpr>;

fn child(e: &Option<Box<pb::Expr>>, schema: &Schema, what: &str) -> Result<PhysicalExprRef> {
    match e {
        Some(e) => create_expr(e, schema),
        None => Err(plan_error(format!("{what} without its operand"))),
    }
}

/// Dispatches to one small function per kind: the recursion (one `create_expr` and one kind's function per
/// level of nesting) then needs little stack per level even in a debug build, where one function holding every
/// kind's locals took about 16 KiB per level (`tests/engine/deep_expressions.rs`).
pub fn create_expr(expr: &pb::Expr, schema: &Schema) -> Result<PhysicalExprRef> {
    let top = EXPR_DEPTH.with(|d| d.replace(d.get() + 1)) == 0;
    let out = create_kind(expr, schema).and_then(|e| arrays_stay_inside(expr, e, schema, top));
    EXPR_DEPTH.with(|d| d.set(d.get() - 1));
    // The arguments after this one are not evaluated on every row.
    EVERY_ROW.with(|c| c.set(false));
    out
}

thread_local! {
    /// How many `create_expr` calls are under way: 1 while an operator's own expression is planned.
    static EXPR_DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Arrays exist only between the functions that make and read them (`functions::array`): an operator's
/// expression (`top`) never yields one, and only functions and NULL tests take one, so no comparison, hash,
/// cast, key or aggregate ever meets an array.
fn arrays_stay_inside(expr: &pb::Expr, e: PhysicalExprRef, schema: &Schema, top: bool) -> Result<PhysicalExprRef> {
    let is_list = |t: DataType| matches!(t, DataType::List(_));
    if top && is_list(e.data_type(schema)?) {
        return Err(plan_error("an array value outside the functions that read it is not supported natively"));
    }
    let reads_arrays = matches!(expr.kind, Some(Kind::ScalarFunction(_) | Kind::IsNull(_) | Kind::IsNotNull(_)));
    if !reads_arrays {
        for c in e.children() {
            if is_list(c.data_type(schema)?) {
                return Err(plan_error("an array argument is not supported natively here"));
            }
        }
    }
    Ok(e)
}

fn create_kind(expr: &pb::Expr, schema: &Schema) -> Result<PhysicalExprRef> {
    let kind = expr.kind.as_ref().ok_or_else(|| plan_error("expression kind not set"))?;
    match kind {
        Kind::Column(c) => column_expr(c, schema),
        Kind::Literal(l) => Ok(Arc::new(Literal::new(to_scalar(l)?))),
        Kind::Comparison(c) => comparison_expr(c, schema),
        Kind::And(a) => and_expr(a, schema),
        Kind::Or(o) => or_expr(o, schema),
        Kind::Not(n) => not_expr(n, schema),
        Kind::IsNull(n) => is_null_expr(n, schema),
        Kind::IsNotNull(n) => is_not_null_expr(n, schema),
        Kind::In(i) => in_expr(i, schema),
        Kind::CaseWhen(c) => case_when_expr(c, schema),
        Kind::Coalesce(c) => coalesce_expr(c, schema),
        Kind::Hash(h) => hash_expr(h, schema),
        Kind::Arithmetic(a) => arithmetic_expr(a, schema),
        Kind::UnaryMinus(u) => unary_minus_expr(u, schema),
        Kind::UnscaledValue(u) => unscaled_value_expr(u, schema),
        Kind::MakeDecimal(m) => make_decimal_expr(m, schema),
        Kind::NormalizeFloat(n) => normalize_float_expr(n, schema),
        Kind::Cast(c) => cast_expr(c, schema),
        Kind::ScalarFunction(f) => super::functions::scalar_function_expr(f, schema),
        Kind::Jvm(j) => jvm_expr(j, schema),
        Kind::Text(t) => super::strings::text_expr(t, schema),
    }
}

/// A Spark expression evaluated on the JVM over the columns it reads (see `expressions/jvm.rs`).
fn jvm_expr(j: &pb::JvmExpr, schema: &Schema) -> Result<PhysicalExprRef> {
    if j.children.is_empty() {
        return Err(plan_error(format!("{}: a JVM expression must read at least one column", j.name)));
    }
    let args = j.children.iter().map(|c| create_expr(c, schema)).collect::<Result<Vec<_>>>()?;
    let return_type = required_type(&j.result_type)?;
    // Spark's code reads strings as bytes whichever way they come, and writes them as bytes, which the kernel
    // checks where the plan carries strings as `Utf8`.
    let kernel = crate::expressions::jvm::JvmKernel::new(j.name.clone(), j.expression.clone(), return_type.clone());
    Ok(Arc::new(crate::expressions::functions::FunctionExpr::new(
        format!("jvm:{}", j.name),
        args,
        return_type,
        Arc::new(kernel),
    )))
}

fn column_expr(c: &pb::ColumnRef, schema: &Schema) -> Result<PhysicalExprRef> {
    let idx = c.index as usize;
    let field = schema
        .fields()
        .get(idx)
        .ok_or_else(|| plan_error(format!("column #{idx} of an input with {} columns", schema.fields().len())))?;
    let expected = required_type(&c.r#type)?;
    if field.data_type() != &expected {
        return Err(plan_error(format!(
            "column #{idx} is {} in the input but {expected} in the plan",
            field.data_type()
        )));
    }
    Ok(Arc::new(Column::new(field.name(), idx)))
}

fn comparison_expr(c: &pb::Comparison, schema: &Schema) -> Result<PhysicalExprRef> {
    let op = pb::CmpOp::try_from(c.op).map_err(|_| plan_error("unknown comparison"))?;
    let l = NormalizeFloatExpr::wrap_if_float(child(&c.left, schema, "comparison")?, schema)?;
    let r = NormalizeFloatExpr::wrap_if_float(child(&c.right, schema, "comparison")?, schema)?;
    let (lt, rt) = (l.data_type(schema)?, r.data_type(schema)?);
    if lt != rt {
        return Err(plan_error(format!("comparison of {lt} with {rt}")));
    }
    let op = match op {
        pb::CmpOp::Eq => Operator::Eq,
        pb::CmpOp::NotEq => Operator::NotEq,
        pb::CmpOp::Lt => Operator::Lt,
        pb::CmpOp::LtEq => Operator::LtEq,
        pb::CmpOp::Gt => Operator::Gt,
        pb::CmpOp::GtEq => Operator::GtEq,
        pb::CmpOp::EqNullSafe => Operator::IsNotDistinctFrom,
    };
    Ok(Arc::new(BinaryExpr::new(l, op, r)))
}

fn and_expr(a: &pb::And, schema: &Schema) -> Result<PhysicalExprRef> {
    Ok(Arc::new(LazyLogicalExpr::new(
        LogicalOp::And,
        boolean(child(&a.left, schema, "AND")?, schema)?,
        boolean(child(&a.right, schema, "AND")?, schema)?,
    )))
}

fn or_expr(o: &pb::Or, schema: &Schema) -> Result<PhysicalExprRef> {
    Ok(Arc::new(LazyLogicalExpr::new(
        LogicalOp::Or,
        boolean(child(&o.left, schema, "OR")?, schema)?,
        boolean(child(&o.right, schema, "OR")?, schema)?,
    )))
}

fn not_expr(n: &pb::Not, schema: &Schema) -> Result<PhysicalExprRef> {
    Ok(Arc::new(NotExpr::new(boolean(child(&n.child, schema, "NOT")?, schema)?)))
}

fn is_null_expr(n: &pb::IsNull, schema: &Schema) -> Result<PhysicalExprRef> {
    Ok(Arc::new(IsNullExpr::new(child(&n.child, schema, "IS NULL")?)))
}

fn is_not_null_expr(n: &pb::IsNotNull, schema: &Schema) -> Result<PhysicalExprRef> {
    Ok(Arc::new(IsNotNullExpr::new(child(&n.child, schema, "IS NOT NULL")?)))
}

fn in_expr(i: &pb::In, schema: &Schema) -> Result<PhysicalExprRef> {
    let value = NormalizeFloatExpr::wrap_if_float(child(&i.value, schema, "IN")?, schema)?;
    let vt = value.data_type(schema)?;
    let list = i
        .list
        .iter()
        .map(|e| {
            if !matches!(e.kind, Some(Kind::Literal(_))) {
                return Err(plan_error("IN list items must be literals"));
            }
            let item = NormalizeFloatExpr::wrap_if_float(create_expr(e, schema)?, schema)?;
            let it = item.data_type(schema)?;
            if it != vt && it != arrow::datatypes::DataType::Null {
                return Err(plan_error(format!("IN list item of type {it} for a value of type {vt}")));
            }
            Ok(item)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(InListExpr::try_new(value, list, false, schema)?))
}

fn case_when_expr(c: &pb::CaseWhen, schema: &Schema) -> Result<PhysicalExprRef> {
    if c.when.len() != c.then.len() || c.when.is_empty() {
        return Err(plan_error("CASE WHEN needs as many THEN as WHEN branches, at least one"));
    }
    let result_type = required_type(&c.result_type)?;
    let when_then = c
        .when
        .iter()
        .zip(&c.then)
        .map(|(w, t)| Ok((boolean(create_expr(w, schema)?, schema)?, create_expr(t, schema)?)))
        .collect::<Result<Vec<_>>>()?;
    let else_expr = c.else_expr.as_ref().map(|e| create_expr(e, schema)).transpose()?;
    for (_, t) in &when_then {
        check_type(t, &result_type, schema, "CASE branch")?;
    }
    if let Some(e) = &else_expr {
        check_type(e, &result_type, schema, "CASE ELSE")?;
    }
    Ok(Arc::new(CaseExpr::try_new(None, when_then, else_expr)?))
}

fn coalesce_expr(c: &pb::Coalesce, schema: &Schema) -> Result<PhysicalExprRef> {
    if c.children.is_empty() {
        return Err(plan_error("COALESCE without arguments"));
    }
    let result_type = required_type(&c.result_type)?;
    let args = c.children.iter().map(|e| create_expr(e, schema)).collect::<Result<Vec<_>>>()?;
    for a in &args {
        check_type(a, &result_type, schema, "COALESCE argument")?;
    }
    Ok(Arc::new(CoalesceExpr::new(args, result_type)))
}

fn hash_expr(h: &pb::Hash, schema: &Schema) -> Result<PhysicalExprRef> {
    let function = match pb::HashFunction::try_from(h.function) {
        Ok(pb::HashFunction::Murmur3) => HashFunction::Murmur3 {
            seed: i32::try_from(h.seed).map_err(|_| plan_error(format!("murmur3 seed {}", h.seed)))?,
        },
        Ok(pb::HashFunction::Xxhash64) => HashFunction::XxHash64 { seed: h.seed },
        Err(_) => return Err(plan_error("unknown hash function")),
    };
    let args = h.children.iter().map(|e| create_expr(e, schema)).collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(HashExpr::try_new(function, args, schema)?))
}

fn arithmetic_expr(a: &pb::Arithmetic, schema: &Schema) -> Result<PhysicalExprRef> {
    let op = arith_op(a.op)?;
    let mode = eval_mode(a.eval_mode)?;
    let l = child(&a.left, schema, "arithmetic")?;
    let r = child(&a.right, schema, "arithmetic")?;
    let e = arithmetic::create(op, l, r, required_type(&a.result_type)?, mode, schema)?;
    Ok(
        // Spark's BINARY_ARITHMETIC_OVERFLOW (TINYINT/SMALLINT) has no query context.
        QueryContextExpr::wrap(e, a.query_context, &["BINARY_ARITHMETIC_OVERFLOW"]),
    )
}

fn unary_minus_expr(u: &pb::UnaryMinus, schema: &Schema) -> Result<PhysicalExprRef> {
    let mode = eval_mode(u.eval_mode)?;
    let e = arithmetic::create_negate(child(&u.child, schema, "unary minus")?, mode, schema)?;
    Ok(QueryContextExpr::wrap(e, u.query_context, &[]))
}

fn unscaled_value_expr(u: &pb::UnscaledValue, schema: &Schema) -> Result<PhysicalExprRef> {
    let c = child(&u.child, schema, "UnscaledValue")?;
    Ok(match c.data_type(schema)? {
        arrow::datatypes::DataType::Decimal128(p, _) if p <= 18 => Arc::new(UnscaledValueExpr::new(c)),
        t => return Err(plan_error(format!("UnscaledValue of {t}"))),
    })
}

fn make_decimal_expr(m: &pb::MakeDecimal, schema: &Schema) -> Result<PhysicalExprRef> {
    let c = child(&m.child, schema, "MakeDecimal")?;
    if c.data_type(schema)? != arrow::datatypes::DataType::Int64 || !(1..=38).contains(&m.precision) {
        return Err(plan_error(format!("MakeDecimal({}, {}) of {}", m.precision, m.scale, c.data_type(schema)?)));
    }
    Ok(Arc::new(MakeDecimalExpr::new(c, m.precision as u8, m.scale as i8, m.null_on_overflow)))
}

fn normalize_float_expr(n: &pb::NormalizeFloat, schema: &Schema) -> Result<PhysicalExprRef> {
    let c = child(&n.child, schema, "NormalizeNaNAndZero")?;
    Ok(match c.data_type(schema)? {
        arrow::datatypes::DataType::Float32 | arrow::datatypes::DataType::Float64 => {
            Arc::new(NormalizeFloatExpr::new(c))
        }
        t => return Err(plan_error(format!("NormalizeNaNAndZero of {t}"))),
    })
}

/// What an expression's planning reads beside the proto: properties of the whole plan and task, set around
/// planning by [`with_plan_context`] rather than passed through every expression's builder.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlanContext {
    /// The JVM version the plan must match (`ExecConfig.jdk_feature`, 0: none), which casts and some functions
    /// read.
    pub jdk_feature: u32,
    /// The partition of the block's RDD the task computes (`TaskSettings.partition_index`): Spark's
    /// `partitionIndex`, which its nondeterministic expressions start from.
    pub partition_index: i32,
    /// Whether Spark's strings travel as Arrow `Binary` in this plan ([`super::strings::as_bytes`]): every
    /// `UTF8` type and literal of the proto plans as `Binary`, and a function, cast or JVM expression that would
    /// read or make a string refuses the plan.
    pub strings_as_bytes: bool,
    /// Whether the expression being planned is the native side of a `Text` that has Spark's twin
    /// ([`super::strings::text_expr`]): there a string made from bytes ([`crate::expressions::text::TextFromBytes`],
    /// a JVM expression's string) is checked per batch, and a batch of invalid UTF-8 goes to the twin.
    pub text_twin: bool,
}

thread_local! {
    static PLAN_CONTEXT: std::cell::Cell<PlanContext> = const {
        std::cell::Cell::new(PlanContext {
            jdk_feature: 0,
            partition_index: 0,
            strings_as_bytes: false,
            text_twin: false,
        })
    };
    /// Whether the expression being planned is evaluated on every row of its operator's input, as Spark
    /// evaluates a nondeterministic expression (`rand`, `monotonically_increasing_id`) for its sequence of
    /// values to be Spark's: a projection's expression ([`with_every_row`]) and, below it, each first argument
    /// (Catalyst evaluates an expression's first argument whenever it evaluates the expression; the others
    /// maybe not: AND, CASE, a null-intolerant operator's shortcut). [`create_expr`] clears it after each
    /// expression it plans, so that an argument after the first sees it cleared (arguments are planned in
    /// Catalyst's order).
    static EVERY_ROW: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` (which plans expressions) in `context`.
pub fn with_plan_context<T>(context: PlanContext, f: impl FnOnce() -> T) -> T {
    let before = PLAN_CONTEXT.with(|c| c.replace(context));
    let out = f();
    PLAN_CONTEXT.with(|c| c.set(before));
    out
}

/// The JVM version the plan being built must match (0: no JVM to match).
pub(super) fn jdk_feature() -> u32 {
    PLAN_CONTEXT.with(|c| c.get().jdk_feature)
}

/// Whether the plan being built carries Spark's strings as `Binary`.
pub(super) fn strings_as_bytes() -> bool {
    PLAN_CONTEXT.with(|c| c.get().strings_as_bytes)
}

/// The plan context of the calling thread.
pub fn plan_context() -> PlanContext {
    PLAN_CONTEXT.with(|c| c.get())
}

/// The partition index the task's nondeterministic expressions start from.
pub(super) fn partition_index() -> i32 {
    PLAN_CONTEXT.with(|c| c.get().partition_index)
}

/// Plans `expr` as one evaluated on every row of the operator's input (a projection's expression).
pub(super) fn create_every_row_expr(expr: &pb::Expr, schema: &Schema) -> Result<PhysicalExprRef> {
    EVERY_ROW.with(|c| c.set(true));
    create_expr(expr, schema)
}

/// Whether the expression whose planning has just begun is evaluated on every row (see `EVERY_ROW`).
pub(super) fn every_row() -> bool {
    EVERY_ROW.with(|c| c.get())
}

fn cast_expr(c: &pb::Cast, schema: &Schema) -> Result<PhysicalExprRef> {
    if let Some(e) = super::strings::cast_from_bytes(c, schema)? {
        return Ok(e);
    }
    super::strings::refuse_text("CAST", c.to.as_ref(), &c.child.as_deref().into_iter().collect::<Vec<_>>())?;
    let mode = eval_mode(c.eval_mode)?;
    let to = required_type(&c.to)?;
    let input = child(&c.child, schema, "CAST")?;
    let jdk = jdk_feature();
    let from = input.data_type(schema)?;
    if jdk != 0 && jdk < cast::FLOAT_TEXT_MIN_JDK && cast::depends_on_java_double_to_string(&from, &to) {
        return Err(plan_error(format!(
            "cast from {from} to {to} follows Java's Double.toString, whose output changed in JDK {}; this JVM is {jdk}",
            cast::FLOAT_TEXT_MIN_JDK
        )));
    }
    let e = cast::create(input, to, mode, &c.timezone, schema)?;
    Ok(
        // Spark raises these two from a cast without its query context.
        QueryContextExpr::wrap(e, c.query_context, &["CAST_OVERFLOW", "NUMERIC_OUT_OF_SUPPORTED_RANGE"]),
    )
}

fn boolean(e: PhysicalExprRef, schema: &Schema) -> Result<PhysicalExprRef> {
    check_type(&e, &arrow::datatypes::DataType::Boolean, schema, "logical operand")?;
    Ok(e)
}

/// A NULL literal adopts any type; everything else must be exactly the type Spark resolved.
fn check_type(e: &PhysicalExprRef, t: &arrow::datatypes::DataType, schema: &Schema, what: &str) -> Result<()> {
    let actual = e.data_type(schema)?;
    if &actual == t || actual == arrow::datatypes::DataType::Null {
        Ok(())
    } else {
        Err(plan_error(format!("{what} is {actual}, expected {t}")))
    }
}

/// Spark's `EvalMode` from its proto value.
pub fn eval_mode(m: i32) -> Result<Mode> {
    Ok(match pb::EvalMode::try_from(m).map_err(|_| plan_error(format!("unknown eval mode {m}")))? {
        pb::EvalMode::Legacy => Mode::Legacy,
        pb::EvalMode::Ansi => Mode::Ansi,
        pb::EvalMode::Try => Mode::Try,
    })
}

fn arith_op(o: i32) -> Result<Op> {
    Ok(match pb::ArithOp::try_from(o).map_err(|_| plan_error(format!("unknown arithmetic operator {o}")))? {
        pb::ArithOp::Add => Op::Add,
        pb::ArithOp::Subtract => Op::Sub,
        pb::ArithOp::Multiply => Op::Mul,
        pb::ArithOp::Divide => Op::Div,
        pb::ArithOp::Remainder => Op::Rem,
        pb::ArithOp::IntegralDivide => Op::IntDiv,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray, Float64Array};
    use arrow::datatypes::{DataType, Field, Float64Type};
    use arrow::record_batch::RecordBatch;

    #[test]
    fn normalize_float_folds_zeros_and_nans() {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Float64, true)]));
        let column = pb::Expr {
            kind: Some(pb::expr::Kind::Column(pb::ColumnRef {
                index: 0,
                r#type: Some(pb::DataType { id: pb::TypeId::Float64 as i32, ..Default::default() }),
                nullable: true,
            })),
        };
        let e = pb::Expr {
            kind: Some(pb::expr::Kind::NormalizeFloat(Box::new(pb::NormalizeFloat { child: Some(Box::new(column)) }))),
        };
        let expr = create_expr(&e, &schema).unwrap();
        let neg_nan = f64::from_bits(0xfff8_0000_0000_0001);
        let input = Float64Array::from(vec![Some(-0.0), Some(neg_nan), None, Some(1.5)]);
        let batch = RecordBatch::try_new(schema, vec![Arc::new(input)]).unwrap();
        let out = expr.evaluate(&batch).unwrap().into_array(4).unwrap();
        let out = out.as_primitive::<Float64Type>();
        assert_eq!(out.value(0).to_bits(), 0.0f64.to_bits());
        assert_eq!(out.value(1).to_bits(), f64::NAN.to_bits());
        assert!(out.is_null(2));
        assert_eq!(out.value(3), 1.5);
    }
}
