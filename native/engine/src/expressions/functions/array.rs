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

/// Output arrays assembled from elements picked out of source arrays.
pub(crate) struct ListOut<'a> {
    data: MutableArrayData<'a>,
    offsets: Vec<i32>,
    valid: Vec<bool>,
    len: i32,
}

impl<'a> ListOut<'a> {
    pub(crate) fn new(sources: Vec<&'a arrow::array::ArrayData>, rows: usize) -> Self {
        Self { data: MutableArrayData::new(sources, true, rows), offsets: vec![0], valid: Vec::new(), len: 0 }
    }

    pub(crate) fn pick(&mut self, source: usize, index: usize) -> Result<()> {
        self.len += 1;
        Ok(self.data.try_extend(source, index, index + 1)?)
    }

    pub(crate) fn null_element(&mut self) -> Result<()> {
        self.len += 1;
        Ok(self.data.try_extend_nulls(1)?)
    }

    pub(crate) fn end_row(&mut self, valid: bool) {
        self.offsets.push(self.len);
        self.valid.push(valid);
    }

    pub(crate) fn finish(self, field: &FieldRef) -> Result<ArrayRef> {
        let values = make_array(self.data.freeze());
        let list =
            ListArray::try_new(field.clone(), OffsetBuffer::new(self.offsets.into()), values, Some(self.valid.into()))?;
        Ok(Arc::new(list))
    }
}

/// `sort_array(array, ascending)`: Java's stable sort by Spark's ordering, NULLs first ascending and last
/// descending; NULL for a NULL array or order.
#[derive(Debug)]
pub struct SortArray {
    pub field: FieldRef,
}

impl Kernel for SortArray {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let (l, asc) = (lists(&args[0])?, args[1].as_boolean());
        let values = l.values();
        let data = values.to_data();
        let mut out = ListOut::new(vec![&data], l.len());
        let mut order: Vec<usize> = Vec::new();
        for i in 0..l.len() {
            if l.is_null(i) || asc.is_null(i) {
                out.end_row(false);
                continue;
            }
            let start = l.value_offsets()[i] as usize;
            order.clear();
            order.extend(start..start + l.value_length(i) as usize);
            let ascending = asc.value(i);
            order.sort_by(|&a, &b| {
                let o = match (values.is_null(a), values.is_null(b)) {
                    (true, true) => Ordering::Equal,
                    (true, false) => Ordering::Less,
                    (false, true) => Ordering::Greater,
                    _ => compare(values.as_ref(), a, values.as_ref(), b),
                };
                if ascending {
                    o
                } else {
                    o.reverse()
                }
            });
            for &j in &order {
                out.pick(0, j)?;
            }
            out.end_row(true);
        }
        out.finish(&self.field)
    }
}

/// `array_remove(array, value)`: the elements not equal to `value` (NULL elements kept); NULL for a NULL array
/// or value.
#[derive(Debug)]
pub struct ArrayRemove {
    pub field: FieldRef,
}

impl Kernel for ArrayRemove {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let (l, v) = (lists(&args[0])?, &args[1]);
        let values = l.values();
        let data = values.to_data();
        let mut out = ListOut::new(vec![&data], l.len());
        for i in 0..l.len() {
            if l.is_null(i) || v.is_null(i) {
                out.end_row(false);
                continue;
            }
            let start = l.value_offsets()[i] as usize;
            for j in start..start + l.value_length(i) as usize {
                if values.is_null(j) || compare(values.as_ref(), j, v.as_ref(), i) != Ordering::Equal {
                    out.pick(0, j)?;
                }
            }
            out.end_row(true);
        }
        out.finish(&self.field)
    }
}

/// `slice(array, start, length)`: 1-based `start` (negative from the end), `INVALID_PARAMETER_VALUE.START` for
/// 0 and `.LENGTH` for a negative length; empty when `start` is outside the array.
#[derive(Debug)]
pub struct Slice {
    pub field: FieldRef,
}

impl Kernel for Slice {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let l = lists(&args[0])?;
        let (starts, lengths) = (
            args[1].as_primitive::<arrow::datatypes::Int32Type>(),
            args[2].as_primitive::<arrow::datatypes::Int32Type>(),
        );
        let param = |class: &str, extra: Option<(&str, String)>| {
            let mut params = vec![
                ("parameter", if class.ends_with("START") { "`start`" } else { "`length`" }.to_string()),
                ("functionName", "`slice`".to_string()),
            ];
            params.extend(extra);
            SparkError::new(SparkExceptionKind::Runtime, class, &params).into_datafusion()
        };
        let values = l.values();
        let data = values.to_data();
        let mut out = ListOut::new(vec![&data], l.len());
        for i in 0..l.len() {
            if l.is_null(i) || starts.is_null(i) || lengths.is_null(i) {
                out.end_row(false);
                continue;
            }
            let (start, length, n) = (starts.value(i), lengths.value(i), l.value_length(i));
            let from = match start {
                0 => return Err(param("INVALID_PARAMETER_VALUE.START", None)),
                s if s < 0 => s.wrapping_add(n),
                s => s - 1,
            };
            if length < 0 {
                return Err(param("INVALID_PARAMETER_VALUE.LENGTH", Some(("length", length.to_string()))));
            }
            if from >= 0 && from < n {
                // Scala's `slice(from, from + length)`, the end wrapping as Java's int sum does.
                let until = from.wrapping_add(length).clamp(from, n);
                let base = l.value_offsets()[i] as usize;
                for j in from..until {
                    out.pick(0, base + j as usize)?;
                }
            }
            out.end_row(true);
        }
        out.finish(&self.field)
    }
}

/// Each value of `values` as bytes that are equal exactly when Spark's values are (non-float scalars).
fn value_keys(values: &ArrayRef) -> Result<arrow::row::Rows> {
    let converter = arrow::row::RowConverter::new(vec![arrow::row::SortField::new(values.data_type().clone())])?;
    Ok(converter.convert_columns(std::slice::from_ref(values))?)
}

/// The set functions over elements Spark hashes (not floats, whose -0.0 / NaN rules differ between its paths):
/// `array_distinct(a)`, `array_union(a, b)`, `array_intersect(a, b)`, `array_except(a, b)` — each element
/// once, in first-occurrence order, one NULL at most — and `arrays_overlap(a, b)` (true on a common non-NULL
/// element, else NULL when both are non-empty and one holds a NULL, else false). NULL for a NULL array.
#[derive(Debug)]
pub struct ArraySet {
    pub op: SetOp,
    pub field: Option<FieldRef>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    Distinct,
    Union,
    Intersect,
    Except,
    Overlap,
}

impl Kernel for ArraySet {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let a = lists(&args[0])?;
        let b = if self.op == SetOp::Distinct { a } else { lists(&args[1])? };
        let (av, bv) = (a.values(), b.values());
        let (ak, bk) = (value_keys(av)?, value_keys(bv)?);
        let (ad, bd) = (av.to_data(), bv.to_data());
        let mut out = ListOut::new(vec![&ad, &bd], a.len());
        let mut overlaps = Vec::with_capacity(a.len());
        let mut seen: std::collections::HashSet<&[u8]> = std::collections::HashSet::new();
        let mut other: std::collections::HashSet<&[u8]> = std::collections::HashSet::new();
        let range = |l: &ListArray, i: usize| {
            let s = l.value_offsets()[i] as usize;
            s..s + l.value_length(i) as usize
        };
        for i in 0..a.len() {
            if a.is_null(i) || b.is_null(i) {
                out.end_row(false);
                overlaps.push(None);
                continue;
            }
            seen.clear();
            other.clear();
            let mut null_seen = false;
            match self.op {
                SetOp::Distinct | SetOp::Union => {
                    let sources: &[(usize, &ListArray, &arrow::row::Rows)] =
                        if self.op == SetOp::Union { &[(0, a, &ak), (1, b, &bk)] } else { &[(0, a, &ak)] };
                    for (src, l, keys) in sources {
                        for j in range(l, i) {
                            if l.values().is_null(j) {
                                if !null_seen {
                                    null_seen = true;
                                    out.null_element()?;
                                }
                            } else if seen.insert(keys.row(j).data()) {
                                out.pick(*src, j)?;
                            }
                        }
                    }
                }
                SetOp::Intersect | SetOp::Except | SetOp::Overlap => {
                    let mut other_null = false;
                    for j in range(b, i) {
                        if bv.is_null(j) {
                            other_null = true;
                        } else {
                            other.insert(bk.row(j).data());
                        }
                    }
                    if self.op == SetOp::Overlap {
                        let (na, nb) = (a.value_length(i), b.value_length(i));
                        let mut has_null = other_null && na > 0;
                        let mut hit = false;
                        if na > 0 && nb > 0 {
                            for j in range(a, i) {
                                if av.is_null(j) {
                                    has_null = true;
                                } else if other.contains(ak.row(j).data()) {
                                    hit = true;
                                    break;
                                }
                            }
                        }
                        overlaps.push(if hit {
                            Some(true)
                        } else if has_null && na > 0 && nb > 0 {
                            None
                        } else {
                            Some(false)
                        });
                        out.end_row(true);
                        continue;
                    }
                    let keep_in_other = self.op == SetOp::Intersect;
                    let nonempty = self.op == SetOp::Except || (a.value_length(i) > 0 && b.value_length(i) > 0);
                    if nonempty {
                        for j in range(a, i) {
                            if av.is_null(j) {
                                if other_null == keep_in_other && !null_seen {
                                    null_seen = true;
                                    out.null_element()?;
                                }
                            } else {
                                let k = ak.row(j).data();
                                if other.contains(k) == keep_in_other && seen.insert(k) {
                                    out.pick(0, j)?;
                                }
                            }
                        }
                    }
                }
            }
            out.end_row(true);
        }
        match (&self.field, self.op) {
            (_, SetOp::Overlap) => Ok(Arc::new(overlaps.into_iter().collect::<BooleanArray>())),
            (Some(f), _) => out.finish(f),
            (None, _) => internal_err!("array set function without its result type"),
        }
    }
}

/// `regexp_extract_all(str, regex, idx)`: group `idx` of every match (an unmatched optional group as ""); the
/// planner refuses patterns that can match "" and group indexes out of range.
#[derive(Debug)]
pub struct RegexpExtractAll {
    pub regex: Option<Arc<JavaRegex>>,
    pub group: usize,
}

impl Kernel for RegexpExtractAll {
    fn invoke(&self, args: &[ArrayRef]) -> Result<ArrayRef> {
        let s = args[0].as_string::<i32>();
        let mut values = StringBuilder::new();
        let mut offsets = vec![0i32];
        let mut valid = Vec::with_capacity(s.len());
        let mut count = 0i32;
        for i in 0..s.len() {
            let (Some(re), Some(v)) = (&self.regex, s.is_valid(i).then(|| s.value(i))) else {
                valid.push(false);
                offsets.push(count);
                continue;
            };
            let mut last = 0;
            while let Some((_, end, group)) = re.group_from(v, last, self.group)? {
                values.append_value(group.unwrap_or(""));
                count += 1;
                last = end;
            }
            valid.push(true);
            offsets.push(count);
        }
        let list = ListArray::try_new(
            element_field(DataType::Utf8, true),
            OffsetBuffer::new(offsets.into()),
            Arc::new(values.finish()),
            Some(valid.into()),
        )?;
        Ok(Arc::new(list))
    }
}
