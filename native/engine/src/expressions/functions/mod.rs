//! Spark's built-in scalar functions behind one expression: [`FunctionExpr`] evaluates its arguments and hands
//! them to a [`Kernel`] chosen by the planner (`planner/functions.rs`) from Spark's function name. Every kernel
//! in `array`, `binary`, `case`, `codec`, `datetime`, `datetime_format`, `fdlibm`, `math`, `regex`, `rounding`, `string_edit`, `strings` and `timestamp` is Ember's own (each module says why
//! DataFusion's counterpart could not be used as it is); `udf` runs a DataFusion or `datafusion-spark` function
//! proven equal to Spark's (`soundex`, `concat`, `concat_ws`, `sha1`, `sha2`, `crc32`, `bit_count`, …).
use std::fmt;
use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, Schema};
use arrow::record_batch::RecordBatch;
use datafusion_common::Result;
use datafusion_expr::ColumnarValue;
use datafusion_physical_expr::PhysicalExpr;

pub mod array;
pub mod binary;
pub mod case;
pub mod codec;
pub mod datetime;
pub mod datetime_format;
pub mod fdlibm;
pub mod math;
pub mod regex;
pub mod rounding;
pub mod string_edit;
pub mod strings;
pub mod timestamp;
pub mod udf;

/// A function's row-wise work over its evaluated arguments (one array per argument, all of the batch's length).
pub trait Kernel: fmt::Debug + Send + Sync {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef>;
}

/// `name(args)` evaluated by `kernel`: every argument is evaluated on every row (Spark's functions here are
/// strict: no argument is conditional on another's value).
#[derive(Debug)]
pub struct FunctionExpr {
    name: String,
    args: Vec<Arc<dyn PhysicalExpr>>,
    return_type: DataType,
    kernel: Arc<dyn Kernel>,
}

impl FunctionExpr {
    pub fn new(
        name: impl Into<String>,
        args: Vec<Arc<dyn PhysicalExpr>>,
        return_type: DataType,
        kernel: Arc<dyn Kernel>,
    ) -> Self {
        Self { name: name.into(), args, return_type, kernel }
    }
}

impl PartialEq for FunctionExpr {
    fn eq(&self, other: &Self) -> bool {
        // The kernel is a function of the name and the arguments' types (plus literals, which are arguments).
        self.name == other.name && self.return_type == other.return_type && self.args == other.args
    }
}

impl Eq for FunctionExpr {}

impl std::hash::Hash for FunctionExpr {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
        self.args.hash(state);
    }
}

impl fmt::Display for FunctionExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.name)?;
        for (i, a) in self.args.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{a}")?;
        }
        write!(f, ")")
    }
}

impl PhysicalExpr for FunctionExpr {
    fn data_type(&self, _input_schema: &Schema) -> Result<DataType> {
        Ok(self.return_type.clone())
    }

    fn nullable(&self, _input_schema: &Schema) -> Result<bool> {
        Ok(true)
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        let rows = batch.num_rows();
        let args = self.args.iter().map(|a| a.evaluate(batch)?.into_array(rows)).collect::<Result<Vec<_>>>()?;
        Ok(ColumnarValue::Array(self.kernel.invoke(&args)?))
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        self.args.iter().collect()
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn PhysicalExpr>>) -> Result<Arc<dyn PhysicalExpr>> {
        Ok(Arc::new(Self {
            name: self.name.clone(),
            args: children,
            return_type: self.return_type.clone(),
            kernel: Arc::clone(&self.kernel),
        }))
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
