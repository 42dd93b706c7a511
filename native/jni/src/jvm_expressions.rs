//! The production [`JvmEvaluator`]: Spark's projection of a serialized expression, run by the JVM class
//! `org.apache.spark.sql.ember.execution.JvmExpressions` on the task's thread over Arrow's C data interface.
use arrow::array::{Array, ArrayRef, RecordBatch, StructArray};
use arrow::ffi::{from_ffi, to_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use datafusion_common::{DataFusionError, Result};
use ember_engine::expressions::jvm::JvmEvaluator;
use jni::objects::JClass;
use jni::refs::Global;
use jni::{jni_sig, jni_str, JValue};

use crate::bridge::call_source;

pub struct JvmExpressions {
    class: Global<JClass<'static>>,
}

impl JvmExpressions {
    pub fn new(class: Global<JClass<'static>>) -> Self {
        Self { class }
    }
}

impl JvmEvaluator for JvmExpressions {
    fn evaluate(&self, expression: &[u8], args: &RecordBatch, strings_as_bytes: bool) -> Result<ArrayRef> {
        let data = StructArray::from(args.clone()).into_data();
        let (in_array, in_schema) = to_ffi(&data)?;
        let mut in_array = Box::new(in_array);
        let mut in_schema = Box::new(in_schema);
        let mut out_array = Box::new(FFI_ArrowArray::empty());
        let mut out_schema = Box::new(FFI_ArrowSchema::empty());
        let addr = |p: *mut u8| JValue::Long(p as i64);
        // The JVM side keeps its own failures for the task to rethrow.
        let ok = call_source("calling Spark for a JVM expression failed", |env| {
            let bytes = env.byte_array_from_slice(expression)?;
            let args = [
                JValue::Object(&bytes),
                addr(&mut *in_array as *mut FFI_ArrowArray as *mut u8),
                addr(&mut *in_schema as *mut FFI_ArrowSchema as *mut u8),
                addr(&mut *out_array as *mut FFI_ArrowArray as *mut u8),
                addr(&mut *out_schema as *mut FFI_ArrowSchema as *mut u8),
                JValue::Bool(strings_as_bytes),
            ];
            env.call_static_method(&self.class, jni_str!("evaluate"), jni_sig!("([BJJJJZ)Z"), &args)?.z()
        })?;
        if !ok {
            return Err(DataFusionError::External("a JVM expression failed (Spark's exception follows)".into()));
        }
        // SAFETY: the JVM exported one struct array (one column) into the two C structs: the array is moved
        // into `from_ffi`, which takes over its release callback; the schema is released when dropped here.
        let out = unsafe { from_ffi(*out_array, &out_schema) }?;
        // Offsets and UTF-8 checked: a value Spark's code made (a UDF's UTF8String) may hold any bytes; a string
        // it wrote as binary (`strings_as_bytes`) need not be UTF-8.
        out.validate_full()?;
        let out = StructArray::from(out);
        if out.num_columns() != 1 {
            return Err(DataFusionError::Internal(format!("a JVM expression returned {} columns", out.num_columns())));
        }
        Ok(out.column(0).clone())
    }
}
