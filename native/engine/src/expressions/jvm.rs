//! Expressions the engine has no kernel for, evaluated by Spark's own code on the JVM inside the native plan
//! (proto `JvmExpr`): one call per batch with the columns the expression reads, one column back.
//!
//! The engine knows nothing of the JVM: the bridge registers a [`JvmEvaluator`] once per process
//! ([`register_jvm_evaluator`]), which hands the batch over Arrow's C data interface to Spark's projection
//! of the serialized expression. Where none is registered (the engine's own tests, the driver's support
//! check) planning still succeeds and evaluating fails with a message.
use std::sync::{Arc, OnceLock};

use arrow::array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema};
use datafusion_common::{exec_err, internal_err, Result};

use super::functions::Kernel;

/// Evaluates a serialized Spark expression over a batch of its input columns (named `c0`, `c1`, …): one
/// value per row, of the expression's type as Spark's Arrow conversion writes it, a string as `Binary` (any
/// bytes) when `strings_as_bytes`, else as `Utf8` (checked). String columns may come as either.
pub trait JvmEvaluator: Send + Sync {
    fn evaluate(&self, expression: &[u8], args: &RecordBatch, strings_as_bytes: bool) -> Result<ArrayRef>;
}

static EVALUATOR: OnceLock<Box<dyn JvmEvaluator>> = OnceLock::new();

/// The process's evaluator; the first registration wins.
pub fn register_jvm_evaluator(evaluator: Box<dyn JvmEvaluator>) {
    let _ = EVALUATOR.set(evaluator);
}

pub fn jvm_evaluator_registered() -> bool {
    EVALUATOR.get().is_some()
}

/// One `JvmExpr`: the serialized expression and its result type. A string result always comes back as bytes
/// (Spark's code may make any: `CAST(binary AS STRING)`, a UDF's `UTF8String`): as they are where the plan
/// carries strings as `Binary`; where it wants `Utf8`, checked, a value that is not UTF-8 raising
/// [`super::text::InvalidText`] (inside a `Text`, its twin then takes the batch).
pub struct JvmKernel {
    name: String,
    expression: Arc<Vec<u8>>,
    return_type: DataType,
}

impl JvmKernel {
    pub fn new(name: String, expression: Vec<u8>, return_type: DataType) -> Self {
        Self { name, expression: Arc::new(expression), return_type }
    }
}

impl std::fmt::Debug for JvmKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JvmKernel({})", self.name)
    }
}

impl Kernel for JvmKernel {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let Some(first) = args.first() else { return internal_err!("{}: a JVM expression reads no column", self.name) };
        let rows = first.len();
        if rows == 0 {
            return Ok(arrow::array::new_empty_array(&self.return_type));
        }
        let Some(evaluator) = EVALUATOR.get() else {
            return exec_err!("{} is evaluated by Spark on the JVM, and there is no JVM here", self.name);
        };
        let fields: Vec<Field> =
            args.iter().enumerate().map(|(i, a)| Field::new(format!("c{i}"), a.data_type().clone(), true)).collect();
        let batch = RecordBatch::try_new_with_options(
            Arc::new(Schema::new(fields)),
            args.to_vec(),
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )?;
        let out = evaluator.evaluate(&self.expression, &batch, true)?;
        if out.len() != rows {
            return internal_err!("{}: the JVM returned {} values for {rows} rows", self.name, out.len());
        }
        if (out.data_type(), &self.return_type) == (&DataType::Binary, &DataType::Utf8) {
            return super::text::bytes_as_text(&out, &self.name);
        }
        // Spark's Arrow conversion may label types differently (a timestamp's zone, string offsets): same values.
        labelled(out, &self.return_type)
    }
}

/// `out` as `to`, a type with the same values (a string relabelled as bytes, another time zone's label).
pub(crate) fn labelled(out: ArrayRef, to: &DataType) -> Result<ArrayRef> {
    if out.data_type() == to {
        Ok(out)
    } else {
        Ok(cast(&out, to)?)
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{Int32Array, StringArray};

    use super::*;

    /// Without a JVM (no evaluator registered in the engine's tests) a JVM expression plans, and evaluating it
    /// says why it cannot run; an empty batch needs no call.
    #[test]
    fn without_a_jvm_it_plans_and_fails_with_a_message() {
        let kernel = JvmKernel::new("udf(s)".into(), vec![1, 2, 3], DataType::Int32);
        let empty: ArrayRef = Arc::new(StringArray::from(Vec::<Option<&str>>::new()));
        let out = kernel.invoke(&[empty]).unwrap();
        assert_eq!((out.len(), out.data_type()), (0, &DataType::Int32));
        let args: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None]));
        let err = kernel.invoke(&[args]).unwrap_err().to_string();
        assert!(err.contains("udf(s) is evaluated by Spark on the JVM"), "{err}");
        assert!(kernel.invoke(&[]).is_err(), "a JVM expression reads at least one column");
    }
}
