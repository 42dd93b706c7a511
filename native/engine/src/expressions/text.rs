//! An expression that reads or makes text in a plan carrying Spark's strings as bytes (proto `Text`,
//! `planner/strings.rs`). Spark's `UTF8String` holds any bytes and its functions have answers for invalid UTF-8
//! (a length by first-byte tables, a case mapping through a lossy Java string, a cast that fails to parse);
//! Arrow's string kernels take valid UTF-8 only. So each batch is checked: when every string the expression
//! reads is valid UTF-8 (the usual case: one SIMD pass, no copy) the native kernels run over it as `Utf8`;
//! otherwise Spark's own expression runs over the batch on the JVM ([`JvmKernel`]), the same code Spark runs.
//! The same holds for strings the expression makes from bytes (`CAST(binary AS STRING)`, [`TextFromBytes`], or
//! a JVM expression's string): they are checked where they are made, and a batch where one is not valid UTF-8
//! ([`InvalidText`]) goes to Spark's twin too.
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, RecordBatchOptions};
use arrow::compute::{cast_with_options, CastOptions};
use arrow::datatypes::{DataType, SchemaRef};
use datafusion_common::{internal_err, DataFusionError, Result};
use datafusion_physical_expr::PhysicalExpr;

use super::functions::Kernel;
use super::jvm::JvmKernel;

/// The kernel of a `Text` expression, over its children (the columns it reads, strings as `Binary`).
pub struct TextKernel {
    /// The expression, bound to `text_schema` (the children, with Spark's strings as `Utf8`).
    native: Arc<dyn PhysicalExpr>,
    text_schema: SchemaRef,
    /// Spark's expression over the same children, for a batch with invalid UTF-8; None when none is a string.
    spark: Option<JvmKernel>,
    /// The plan's type of the result (a string as `Binary`).
    return_type: DataType,
}

impl TextKernel {
    pub fn new(
        native: Arc<dyn PhysicalExpr>,
        text_schema: SchemaRef,
        spark: Option<JvmKernel>,
        return_type: DataType,
    ) -> Self {
        Self { native, text_schema, spark, return_type }
    }
}

impl std::fmt::Debug for TextKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TextKernel({})", self.native)
    }
}

/// `column` as `to`, the type it has when its strings are text: None when one of them is not valid UTF-8.
fn as_text(column: &ArrayRef, to: &DataType) -> Result<Option<ArrayRef>> {
    if column.data_type() == to {
        return Ok(Some(column.clone()));
    }
    if let (DataType::Binary, DataType::Utf8) = (column.data_type(), to) {
        return Ok(crate::unsafe_row::binary_as_text(column.as_binary::<i32>()).map(|a| Arc::new(a) as ArrayRef));
    }
    // Strings inside arrays: Arrow's cast checks them (no copy of the values), failing on invalid UTF-8.
    let strict = CastOptions { safe: false, ..Default::default() };
    Ok(cast_with_options(column, to, &strict).ok())
}

/// Raised where a string is made from bytes that are not valid UTF-8 in a plan or expression that carries
/// strings as Arrow `Utf8`: inside a `Text` with Spark's twin the batch goes to the twin ([`TextKernel`]);
/// anywhere else (a plan keeping strings as UTF-8, which the planner only allows for JVM expressions) the task
/// fails with this message rather than carry a value Arrow's `Utf8` cannot hold.
#[derive(Debug)]
pub struct InvalidText {
    /// What made the string.
    pub made_by: String,
    /// The first row holding invalid UTF-8.
    pub row: usize,
}

impl std::fmt::Display for InvalidText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} made a string that is not valid UTF-8 (row {} of the batch) in a plan that carries strings as \
             UTF-8; spark.ember.strings.asBytes.enabled=true carries them as bytes, or run this query with \
             spark.ember.enabled=false",
            self.made_by, self.row
        )
    }
}

impl std::error::Error for InvalidText {}

/// Whether `err` is (or wraps) an [`InvalidText`].
pub fn is_invalid_text(err: &DataFusionError) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if e.downcast_ref::<InvalidText>().is_some() {
            return true;
        }
        if let Some(DataFusionError::External(inner)) = e.downcast_ref::<DataFusionError>() {
            if inner.downcast_ref::<InvalidText>().is_some() {
                return true;
            }
        }
        source = e.source();
    }
    false
}

/// `bytes` as `Utf8` without a copy, or [`InvalidText`] naming `made_by` when one value is not valid UTF-8.
pub fn bytes_as_text(bytes: &ArrayRef, made_by: &str) -> Result<ArrayRef> {
    let binary = bytes.as_binary::<i32>();
    match crate::unsafe_row::binary_as_text(binary) {
        Some(text) => Ok(Arc::new(text)),
        None => {
            let row = crate::unsafe_row::first_invalid_utf8(binary.value_offsets(), binary.value_data()).unwrap_or(0);
            Err(DataFusionError::External(Box::new(InvalidText { made_by: made_by.to_string(), row })))
        }
    }
}

/// `CAST(binary AS STRING)` where strings are `Utf8` (the native side of a `Text` with Spark's twin): Spark
/// keeps the bytes as they are; valid UTF-8 is relabelled as text without a copy, anything else is
/// [`InvalidText`], which sends the batch to the twin.
#[derive(Debug)]
pub struct TextFromBytes;

impl Kernel for TextFromBytes {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        match args {
            [bytes] if bytes.data_type() == &DataType::Binary => bytes_as_text(bytes, "CAST(binary AS STRING)"),
            _ => internal_err!("CAST(binary AS STRING) takes one binary column"),
        }
    }
}

impl Kernel for TextKernel {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let Some(rows) = args.first().map(|a| a.len()) else {
            return internal_err!("a text expression reads no column");
        };
        let mut text = Vec::with_capacity(args.len());
        for (arg, field) in args.iter().zip(self.text_schema.fields()) {
            match (as_text(arg, field.data_type())?, &self.spark) {
                (Some(t), _) => text.push(t),
                (None, Some(spark)) => return spark.invoke(args),
                (None, None) => return internal_err!("a text expression without Spark's twin reads invalid UTF-8"),
            }
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        let batch = RecordBatch::try_new_with_options(self.text_schema.clone(), text, &options)?;
        let out = match self.native.evaluate(&batch).and_then(|v| v.into_array(rows)) {
            // A string the expression made from bytes is not UTF-8: Spark's twin evaluates the batch.
            Err(e) if is_invalid_text(&e) => match &self.spark {
                Some(spark) => return spark.invoke(args),
                None => return Err(e),
            },
            other => other?,
        };
        // A string result made from valid text is valid: relabelled as bytes without a copy.
        super::jvm::labelled(out, &self.return_type)
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{BinaryArray, Int32Array};
    use arrow::datatypes::{Field, Schema};
    use datafusion_physical_expr::expressions::Column;

    use super::*;
    use crate::expressions::functions::FunctionExpr;

    /// `octet_length`-like native kernel standing for any string function: the byte length of valid text.
    #[derive(Debug)]
    struct Chars;
    impl Kernel for Chars {
        fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
            let s = args[0].as_string::<i32>();
            Ok(Arc::new(s.iter().map(|v| v.map(|v| v.chars().count() as i32)).collect::<Int32Array>()))
        }
    }

    fn kernel(spark: Option<JvmKernel>) -> TextKernel {
        let schema = Arc::new(Schema::new(vec![Field::new("c0", DataType::Utf8, true)]));
        let native = Arc::new(FunctionExpr::new(
            "chars",
            vec![Arc::new(Column::new("c0", 0))],
            DataType::Int32,
            Arc::new(Chars),
        ));
        TextKernel::new(native, schema, spark, DataType::Int32)
    }

    /// Valid bytes run the native kernel as text; invalid ones go to Spark's twin (here no JVM: its message),
    /// and without a twin the kernel refuses rather than read them as text.
    #[test]
    fn valid_text_runs_natively_and_invalid_bytes_go_to_spark() {
        let spark = JvmKernel::new("chars(s)".into(), vec![1], DataType::Int32);
        let k = kernel(Some(spark));
        let valid: ArrayRef = Arc::new(BinaryArray::from(vec![Some("né".as_bytes()), None, Some(b"".as_slice())]));
        let out = k.invoke(&[valid]).unwrap();
        assert_eq!(out.as_primitive::<arrow::datatypes::Int32Type>(), &Int32Array::from(vec![Some(2), None, Some(0)]));

        let invalid: ArrayRef = Arc::new(BinaryArray::from(vec![Some(b"a".as_slice()), Some(&[0xff, 0x41][..])]));
        let err = k.invoke(std::slice::from_ref(&invalid)).unwrap_err().to_string();
        assert!(err.contains("chars(s) is evaluated by Spark on the JVM"), "{err}");
        assert!(kernel(None).invoke(&[invalid]).is_err());
    }

    /// `CAST(binary AS STRING)` among strings as `Utf8`: valid bytes relabelled as text, invalid ones an
    /// [`InvalidText`] that a `Text` with a twin recognizes through the layers errors gain.
    #[test]
    fn text_from_bytes_relabels_valid_bytes_and_marks_invalid_ones() {
        let valid: ArrayRef = Arc::new(BinaryArray::from(vec![Some("né".as_bytes()), None]));
        let out = TextFromBytes.invoke(&[valid]).unwrap();
        assert_eq!(out.as_string::<i32>().iter().collect::<Vec<_>>(), vec![Some("né"), None]);
        let invalid: ArrayRef = Arc::new(BinaryArray::from(vec![Some(b"a".as_slice()), Some(&[0xc3, 0x28][..])]));
        let err = TextFromBytes.invoke(&[invalid]).unwrap_err();
        assert!(is_invalid_text(&err));
        assert!(
            err.to_string().contains("CAST(binary AS STRING) made a string that is not valid UTF-8 (row 1"),
            "{err}"
        );
        let wrapped = DataFusionError::Context("evaluating".into(), Box::new(err));
        assert!(is_invalid_text(&DataFusionError::ArrowError(
            Box::new(arrow::error::ArrowError::ExternalError(Box::new(wrapped))),
            None
        )));
        assert!(!is_invalid_text(&DataFusionError::Execution("other".into())));
    }
}
