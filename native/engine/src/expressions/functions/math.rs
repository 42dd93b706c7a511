//! Spark's `pmod`: the positive remainder, `r = a % n; if (r < 0) (r + n) % n else r`, in the operands' Java
//! type (TINYINT/SMALLINT through int and narrowed back), wrapping on overflow. A zero divisor (also `-0.0`)
//! gives NULL, or `REMAINDER_BY_ZERO` under ANSI (as Spark 4.1 raises it, golden-checked).
//!
//! Ember's own kernel: DataFusion has no `pmod`; datafusion-spark's `pmod` is not used (not a dependency yet).
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray};
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
};
use datafusion_common::{internal_err, Result};

use super::Kernel;
use crate::error::SparkError;

#[derive(Debug)]
pub struct Pmod {
    pub ansi: bool,
}

fn pmod_i64(a: i64, n: i64) -> i64 {
    let r = a.wrapping_rem(n);
    if r < 0 {
        r.wrapping_add(n).wrapping_rem(n)
    } else {
        r
    }
}

fn pmod_i32(a: i32, n: i32) -> i32 {
    let r = a.wrapping_rem(n);
    if r < 0 {
        r.wrapping_add(n).wrapping_rem(n)
    } else {
        r
    }
}

fn pmod_f64(a: f64, n: f64) -> f64 {
    let r = a % n;
    if r < 0.0 {
        (r + n) % n
    } else {
        r
    }
}

fn pmod_f32(a: f32, n: f32) -> f32 {
    let r = a % n;
    if r < 0.0 {
        (r + n) % n
    } else {
        r
    }
}

impl Pmod {
    fn apply<T: ArrowPrimitiveType>(
        &self,
        l: &ArrayRef,
        r: &ArrayRef,
        zero: impl Fn(T::Native) -> bool,
        f: impl Fn(T::Native, T::Native) -> T::Native,
    ) -> Result<ArrayRef> {
        let (l, r) = (l.as_primitive::<T>(), r.as_primitive::<T>());
        let mut out = Vec::with_capacity(l.len());
        for i in 0..l.len() {
            if l.is_null(i) || r.is_null(i) {
                out.push(None);
                continue;
            }
            let (a, n) = (l.value(i), r.value(i));
            if zero(n) {
                if self.ansi {
                    return Err(SparkError::remainder_by_zero().into_datafusion());
                }
                out.push(None);
            } else {
                out.push(Some(f(a, n)));
            }
        }
        Ok(Arc::new(out.into_iter().collect::<PrimitiveArray<T>>()))
    }
}

impl Kernel for Pmod {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let (l, r) = (&args[0], &args[1]);
        match l.data_type() {
            DataType::Int8 => self.apply::<Int8Type>(l, r, |n| n == 0, |a, n| pmod_i32(a as i32, n as i32) as i8),
            DataType::Int16 => self.apply::<Int16Type>(l, r, |n| n == 0, |a, n| pmod_i32(a as i32, n as i32) as i16),
            DataType::Int32 => self.apply::<Int32Type>(l, r, |n| n == 0, pmod_i32),
            DataType::Int64 => self.apply::<Int64Type>(l, r, |n| n == 0, pmod_i64),
            DataType::Float32 => self.apply::<Float32Type>(l, r, |n| n == 0.0, pmod_f32),
            DataType::Float64 => self.apply::<Float64Type>(l, r, |n| n == 0.0, pmod_f64),
            t => internal_err!("pmod over {t}"),
        }
    }
}
