//! A DataFusion `ScalarUDF` (from `datafusion-spark` or `datafusion-functions`) as a [`Kernel`]: the planner
//! uses it for a Spark function only where the golden table (`tests/data/functions_spark.tsv`) proves the
//! UDF's answers equal to Spark's for the argument types it accepts. The planner checks, when planning, that
//! the UDF itself returns the type Spark resolved, so a disagreement is a fallback, never a wrong type.
use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion_common::config::ConfigOptions;
use datafusion_common::{internal_err, Result};
use datafusion_expr::{ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF};

use super::Kernel;

#[derive(Debug)]
pub struct UdfKernel {
    udf: Arc<ScalarUDF>,
    arg_fields: Vec<FieldRef>,
    return_field: FieldRef,
    config: Arc<ConfigOptions>,
}

impl UdfKernel {
    /// `udf` over arguments of `arg_types`, or `None` when the UDF would not return `return_type` for them
    /// (or rejects them).
    pub fn new(udf: Arc<ScalarUDF>, arg_types: &[DataType], return_type: &DataType) -> Option<Self> {
        let arg_fields: Vec<FieldRef> =
            arg_types.iter().enumerate().map(|(i, t)| Arc::new(Field::new(format!("c{i}"), t.clone(), true))).collect();
        let scalars = vec![None; arg_fields.len()];
        let field =
            udf.return_field_from_args(ReturnFieldArgs { arg_fields: &arg_fields, scalar_arguments: &scalars }).ok()?;
        if field.data_type() != return_type {
            return None;
        }
        Some(Self { udf, arg_fields, return_field: field, config: Arc::new(ConfigOptions::default()) })
    }
}

impl Kernel for UdfKernel {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let rows = args.first().map_or(0, |a| a.len());
        let out = self.udf.invoke_with_args(ScalarFunctionArgs {
            args: args.iter().map(|a| ColumnarValue::Array(Arc::clone(a))).collect(),
            arg_fields: self.arg_fields.clone(),
            number_rows: rows,
            return_field: Arc::clone(&self.return_field),
            config_options: Arc::clone(&self.config),
        })?;
        let array = out.into_array(rows)?;
        if array.data_type() != self.return_field.data_type() {
            return internal_err!(
                "{} returned {} where {} was planned",
                self.udf.name(),
                array.data_type(),
                self.return_field.data_type()
            );
        }
        Ok(array)
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{Array, AsArray, Int64Array};

    use super::*;

    #[test]
    fn runs_a_datafusion_spark_function_and_checks_its_type() {
        let hex = datafusion_spark::function::math::hex();
        assert!(UdfKernel::new(Arc::clone(&hex), &[DataType::Int64], &DataType::Int32).is_none());
        let k = UdfKernel::new(hex, &[DataType::Int64], &DataType::Utf8).expect("hex(bigint) is a string");
        let out = k.invoke(&[Arc::new(Int64Array::from(vec![Some(255), None, Some(-1)]))]).unwrap();
        let out = out.as_string::<i32>();
        // Spark: hex(255) = FF, hex(-1) = FFFFFFFFFFFFFFFF (two's complement), hex(NULL) = NULL.
        assert_eq!(out.value(0), "FF");
        assert!(out.is_null(1));
        assert_eq!(out.value(2), "FFFFFFFFFFFFFFFF");
    }
}
