//! Spark's array functions over arrays that live inside one expression (`size(split(s, ','))`,
//! `split(s, ' ')[0]`, `array_contains(array(a, b), x)`): made by `split`, `array` or a literal and read by the
//! others here. An array never leaves an expression (the planner refuses one as an operator's value), so no
//! native operator stores, compares, hashes or sorts one. Arrow `List<element>` as Spark's `ArrowUtils` names it.
//!
//! Ember's own: DataFusion's `array_*` functions are 1-based or 0-based differently, return NULL where Spark
//! raises (`element_at` under ANSI), and compare floats by IEEE equality where Spark's ordering makes NaN equal
//! to NaN and -0.0 to 0.0.
use std::cmp::Ordering;
use std::sync::Arc;

use arrow::array::{
    make_array, Array, ArrayRef, AsArray, BooleanArray, GenericListArray, Int32Array, Int64Array, ListArray,
    MutableArrayData, StringBuilder,
};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion_common::{internal_err, DataFusionError, Result};

use super::regex::JavaRegex;
use super::Kernel;
use crate::error::{SparkError, SparkExceptionKind};

/// Spark's Arrow field of an array's elements.
pub fn element_field(element: DataType, contains_null: bool) -> FieldRef {
    Arc::new(Field::new("element", element, contains_null))
}

fn lists(a: &ArrayRef) -> Result<&ListArray> {
    match a.data_type() {
        DataType::List(_) => Ok(a.as_list::<i32>()),
        t => internal_err!("array function over {t}"),
    }
}

/// Element types whose values the comparing functions order as Spark's `PhysicalDataType.ordering` does.
pub fn comparable_element(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Boolean
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Date32
            | DataType::Utf8
            | DataType::Decimal128(_, _)
            | DataType::Timestamp(_, _)
    )
}

/// Spark's ordering of two non-null values at `i` of `a` and `j` of `b` (same type): floats with NaN above every
/// number and -0.0 equal to 0.0, strings and binaries by bytes.
fn compare(a: &dyn Array, i: usize, b: &dyn Array, j: usize) -> Ordering {
    use arrow::datatypes::*;
    fn float(x: f64, y: f64) -> Ordering {
        match (x.is_nan(), y.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            // -0.0 == 0.0 here.
            _ => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        }
    }
    match a.data_type() {
        DataType::Boolean => a.as_boolean().value(i).cmp(&b.as_boolean().value(j)),
        DataType::Int8 => a.as_primitive::<Int8Type>().value(i).cmp(&b.as_primitive::<Int8Type>().value(j)),
        DataType::Int16 => a.as_primitive::<Int16Type>().value(i).cmp(&b.as_primitive::<Int16Type>().value(j)),
        DataType::Int32 => a.as_primitive::<Int32Type>().value(i).cmp(&b.as_primitive::<Int32Type>().value(j)),
        DataType::Int64 => a.as_primitive::<Int64Type>().value(i).cmp(&b.as_primitive::<Int64Type>().value(j)),
        DataType::Date32 => a.as_primitive::<Date32Type>().value(i).cmp(&b.as_primitive::<Date32Type>().value(j)),
        DataType::Timestamp(_, _) => a
            .as_primitive::<TimestampMicrosecondType>()
            .value(i)
            .cmp(&b.as_primitive::<TimestampMicrosecondType>().value(j)),
        DataType::Decimal128(_, _) => {
            a.as_primitive::<Decimal128Type>().value(i).cmp(&b.as_primitive::<Decimal128Type>().value(j))
        }
        DataType::Float32 => {
            float(a.as_primitive::<Float32Type>().value(i) as f64, b.as_primitive::<Float32Type>().value(j) as f64)
        }
        DataType::Float64 => float(a.as_primitive::<Float64Type>().value(i), b.as_primitive::<Float64Type>().value(j)),
        DataType::Utf8 => a.as_string::<i32>().value(i).as_bytes().cmp(b.as_string::<i32>().value(j).as_bytes()),
        _ => Ordering::Equal,
    }
}

fn array_index_error(class: &str, index: i64, size: usize) -> DataFusionError {
    SparkError::new(
        SparkExceptionKind::ArrayIndex,
        class,
        &[("indexValue", index.to_string()), ("arraySize", size.to_string())],
    )
    .into_datafusion()
}

/// `split(str, regex, limit)`: `UTF8String.split` — an empty pattern splits a non-empty string into its
/// characters (the last one takes the rest at the limit); otherwise Java's `String.split(regex, limit)` with
/// limit 0 read as -1 (trailing empty strings kept). The planner refuses other patterns that can match "",
/// where Java steps through UTF-16 units.
#[derive(Debug)]
pub struct Split {
    /// None: a NULL pattern. `Some(None)`: the empty pattern.
    pub regex: Option<Option<Arc<JavaRegex>>>,
}

impl Kernel for Split {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let s = args[0].as_string::<i32>();
        let limits = args[2].as_primitive::<arrow::datatypes::Int32Type>();
        let mut values = StringBuilder::new();
        let mut offsets = vec![0i32];
        let mut valid = Vec::with_capacity(s.len());
        let mut parts: Vec<&str> = Vec::new();
        for i in 0..s.len() {
            let (Some(regex), false, false) = (&self.regex, s.is_null(i), limits.is_null(i)) else {
                valid.push(false);
                offsets.push(*offsets.last().expect("offsets"));
                continue;
            };
            let (v, limit) = (s.value(i), limits.value(i));
            parts.clear();
            match regex {
                None if !v.is_empty() => {
                    let chars = v.chars().count();
                    let n = if limit > chars as i32 || limit <= 0 { chars } else { limit as usize };
                    let mut rest = v;
                    for _ in 0..n - 1 {
                        let c = rest.chars().next().expect("a character").len_utf8();
                        parts.push(&rest[..c]);
                        rest = &rest[c..];
                    }
                    parts.push(rest);
                }
                None => parts.push(v),
                Some(re) => {
                    let limited = limit > 0;
                    let mut index = 0;
                    let mut last = 0;
                    loop {
                        if limited && parts.len() == limit as usize - 1 {
                            break;
                        }
                        match re.find_from(v, last)? {
                            Some((start, end)) => {
                                parts.push(&v[index..start]);
                                index = end;
                                last = end;
                            }
                            None => break,
                        }
                    }
                    parts.push(&v[index..]);
                }
            }
            for p in &parts {
                values.append_value(p);
            }
            valid.push(true);
            offsets.push(offsets.last().expect("offsets") + parts.len() as i32);
        }
        let list = GenericListArray::<i32>::try_new(
            element_field(DataType::Utf8, false),
            OffsetBuffer::new(offsets.into()),
            Arc::new(values.finish()),
            Some(valid.into()),
        )?;
        Ok(Arc::new(list))
    }
}

/// `size(array)` / `cardinality(array)`: the element count; for a NULL array -1 when Spark's
/// `legacySizeOfNull` (`spark.sql.legacy.sizeOfNull` without ANSI), else NULL.
#[derive(Debug)]
pub struct Size {
    pub legacy_size_of_null: bool,
}

impl Kernel for Size {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let l = lists(&args[0])?;
        let out: Int32Array = (0..l.len())
            .map(|i| if l.is_null(i) { self.legacy_size_of_null.then_some(-1) } else { Some(l.value_length(i)) })
            .collect();
        Ok(Arc::new(out))
    }
}

/// `element_at(array, index)` (1-based, negative from the end; `one_based`) and `array[index]` (0-based):
/// NULL for a NULL array or index or element; an index out of bounds NULL, or under ANSI
/// `INVALID_ARRAY_INDEX_IN_ELEMENT_AT` / `INVALID_ARRAY_INDEX`; `element_at` of index 0 `INVALID_INDEX_OF_ZERO`
/// in every mode.
#[derive(Debug)]
pub struct ElementAt {
    pub one_based: bool,
    pub ansi: bool,
}

impl Kernel for ElementAt {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let l = lists(&args[0])?;
        let index: Vec<Option<i64>> = match args[1].data_type() {
            DataType::Int32 => {
                args[1].as_primitive::<arrow::datatypes::Int32Type>().iter().map(|v| v.map(i64::from)).collect()
            }
            // GetArrayItem reads a long ordinal as Number.intValue (its low 32 bits).
            DataType::Int64 => args[1]
                .as_primitive::<arrow::datatypes::Int64Type>()
                .iter()
                .map(|v| v.map(|x| x as i32 as i64))
                .collect(),
            t => return internal_err!("array index of type {t}"),
        };
        let values = l.values();
        let data = values.to_data();
        let mut picks = MutableArrayData::new(vec![&data], true, l.len());
        for (i, idx) in index.iter().enumerate() {
            let pick = match idx {
                Some(k) if l.is_valid(i) => {
                    let (start, n) = (l.value_offsets()[i] as usize, l.value_length(i) as i64);
                    let at = if self.one_based {
                        if n < k.abs() {
                            if self.ansi {
                                return Err(array_index_error("INVALID_ARRAY_INDEX_IN_ELEMENT_AT", *k, n as usize));
                            }
                            None
                        } else if *k == 0 {
                            return Err(SparkError::new(SparkExceptionKind::Runtime, "INVALID_INDEX_OF_ZERO", &[])
                                .into_datafusion());
                        } else if *k > 0 {
                            Some(k - 1)
                        } else {
                            Some(n + k)
                        }
                    } else if *k < 0 || *k >= n {
                        if self.ansi {
                            return Err(array_index_error("INVALID_ARRAY_INDEX", *k, n as usize));
                        }
                        None
                    } else {
                        Some(*k)
                    };
                    at.map(|a| start + a as usize)
                }
                _ => None,
            };
            match pick {
                Some(p) => picks.try_extend(0, p, p + 1)?,
                None => picks.try_extend_nulls(1)?,
            }
        }
        Ok(make_array(picks.freeze()))
    }
}

/// `array_contains(array, value)` (true / NULL when not found and the array holds a NULL / false) and
/// `array_position(array, value)` (the first 1-based position, 0 when absent); NULL for a NULL array or value.
#[derive(Debug)]
pub struct ArraySearch {
    pub position: bool,
}

impl Kernel for ArraySearch {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let (l, v) = (lists(&args[0])?, &args[1]);
        let values = l.values();
        let mut found = Vec::with_capacity(l.len());
        for i in 0..l.len() {
            if l.is_null(i) || v.is_null(i) {
                found.push(None);
                continue;
            }
            let start = l.value_offsets()[i] as usize;
            let n = l.value_length(i) as usize;
            let hit = (start..start + n)
                .find(|&j| values.is_valid(j) && compare(values.as_ref(), j, v.as_ref(), i) == Ordering::Equal);
            found.push(match hit {
                Some(j) => Some((j - start + 1) as i64),
                None if !self.position && (start..start + n).any(|j| values.is_null(j)) => None,
                None => Some(0),
            });
        }
        Ok(if self.position {
            Arc::new(found.into_iter().collect::<Int64Array>())
        } else {
            Arc::new(found.into_iter().map(|f| f.map(|p| p > 0)).collect::<BooleanArray>())
        })
    }
}

/// `array_max` / `array_min`: the largest / smallest non-NULL element by Spark's ordering; NULL for a NULL or
/// all-NULL array.
#[derive(Debug)]
pub struct ArrayExtremum {
    pub max: bool,
}

impl Kernel for ArrayExtremum {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let l = lists(&args[0])?;
        let values = l.values();
        let data = values.to_data();
        let mut picks = MutableArrayData::new(vec![&data], true, l.len());
        for i in 0..l.len() {
            let mut best: Option<usize> = None;
            if l.is_valid(i) {
                let start = l.value_offsets()[i] as usize;
                for j in start..start + l.value_length(i) as usize {
                    if values.is_null(j) {
                        continue;
                    }
                    let better = match best {
                        None => true,
                        Some(b) => {
                            let o = compare(values.as_ref(), j, values.as_ref(), b);
                            if self.max {
                                o == Ordering::Greater
                            } else {
                                o == Ordering::Less
                            }
                        }
                    };
                    if better {
                        best = Some(j);
                    }
                }
            }
            match best {
                Some(b) => picks.try_extend(0, b, b + 1)?,
                None => picks.try_extend_nulls(1)?,
            }
        }
        Ok(make_array(picks.freeze()))
    }
}

/// `array_join(array, delimiter[, nullReplacement])`: the elements joined; NULL elements skipped, or replaced
/// (as elements) by `nullReplacement`; NULL when any argument is NULL.
#[derive(Debug)]
pub struct ArrayJoin;

impl Kernel for ArrayJoin {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let l = lists(&args[0])?;
        let delim = args[1].as_string::<i32>();
        let replacement = args.get(2).map(|a| a.as_string::<i32>());
        let values = l.values().as_string::<i32>();
        let mut out = StringBuilder::new();
        let mut buf = String::new();
        for i in 0..l.len() {
            if l.is_null(i) || delim.is_null(i) || replacement.is_some_and(|r| r.is_null(i)) {
                out.append_null();
                continue;
            }
            buf.clear();
            let mut first = true;
            let start = l.value_offsets()[i] as usize;
            for j in start..start + l.value_length(i) as usize {
                let item = if values.is_null(j) {
                    match replacement {
                        Some(r) => r.value(i),
                        None => continue,
                    }
                } else {
                    values.value(j)
                };
                if !first {
                    buf.push_str(delim.value(i));
                }
                buf.push_str(item);
                first = false;
            }
            out.append_value(&buf);
        }
        Ok(Arc::new(out.finish()))
    }
}

/// `array(e1, e2, …)`: one array per row of the arguments' values (NULLs kept as elements).
#[derive(Debug)]
pub struct CreateArray {
    pub field: FieldRef,
}

impl Kernel for CreateArray {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let rows = args.first().map_or(0, |a| a.len());
        let data: Vec<_> = args.iter().map(|a| a.to_data()).collect();
        let mut values = MutableArrayData::new(data.iter().collect(), false, rows * args.len());
        for row in 0..rows {
            for a in 0..args.len() {
                values.try_extend(a, row, row + 1)?;
            }
        }
        let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(args.len(), rows));
        Ok(Arc::new(ListArray::try_new(self.field.clone(), offsets, make_array(values.freeze()), None)?))
    }
}
