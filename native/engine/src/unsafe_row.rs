//! Arrow batches → Spark `UnsafeRow`s, byte for byte what Spark's own `ColumnarToRowExec` (through
//! `GenerateUnsafeProjection` and `UnsafeRowWriter`) writes for the same values, so that a native plan's output
//! reaches Spark's row operators without a per-value read through Arrow Java.
//!
//! A row: a null bitset of ⌈fields / 64⌉ words, one 8-byte slot per field, then the variable-length region.
//! Fixed-width values sit in the low bytes of their slot (little-endian), the rest zero; a null field has its
//! bit set and a zero slot. Strings and binaries go to the variable-length region, zero-padded to whole words,
//! with `(offset << 32) | length` in the slot (offset from the row's start). Decimals of precision ≤ 18 are
//! their unscaled `long`; wider ones always take 16 bytes of the variable-length region, null or not (Spark keeps
//! the space so that the value can be updated in place), holding Java's `BigInteger.toByteArray()` of the
//! unscaled value; a null one keeps its offset with length 0.
//!
//! The output buffer holds the rows one after another, each preceded by its size as a little-endian `u64`.
use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Decimal128Array, GenericByteArray, GenericByteViewArray, PrimitiveArray,
};
use arrow::datatypes::{
    ByteArrayType, ByteViewType, DataType, Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, TimeUnit, TimestampMicrosecondType,
};
use std::mem::size_of;
use std::sync::Arc;

use arrow::array::NullBufferBuilder;
use arrow::array::{BinaryArray, NullArray, StringArray};
use arrow::buffer::{BooleanBuffer, NullBuffer, OffsetBuffer};
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow::record_batch::{RecordBatch, RecordBatchOptions, RecordBatchReader};
use datafusion_common::{exec_err, DataFusionError, Result};

/// Can rows of this type be written (the types a native plan outputs)?
pub fn supported(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Null
            | DataType::Boolean
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Date32
            | DataType::Timestamp(TimeUnit::Microsecond, _)
            | DataType::Decimal128(_, _)
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
    )
}

/// Rows per tile of [`write_rows`] (a few hundred KiB of output rows at typical widths).
const TILE_ROWS: usize = 512;

/// Digits an unscaled `long` holds: wider decimals are variable-length (`Decimal.MAX_LONG_DIGITS`).
const MAX_LONG_DIGITS: u8 = 18;

fn round_to_word(n: usize) -> usize {
    (n + 7) & !7
}

/// The bytes of a string or binary column's value `i` (None when null).
trait Bytes {
    fn bytes_at(&self, i: usize) -> Option<&[u8]>;
}

impl<T: ByteArrayType> Bytes for GenericByteArray<T> {
    fn bytes_at(&self, i: usize) -> Option<&[u8]> {
        self.is_valid(i).then(|| self.value(i).as_ref())
    }
}

impl<T: ByteViewType + ?Sized> Bytes for GenericByteViewArray<T> {
    fn bytes_at(&self, i: usize) -> Option<&[u8]> {
        self.is_valid(i).then(|| self.value(i).as_ref())
    }
}

fn bytes_of(a: &ArrayRef) -> Option<&dyn Bytes> {
    Some(match a.data_type() {
        DataType::Utf8 => a.as_string::<i32>() as &dyn Bytes,
        DataType::LargeUtf8 => a.as_string::<i64>(),
        DataType::Utf8View => a.as_string_view(),
        DataType::Binary => a.as_binary::<i32>(),
        DataType::LargeBinary => a.as_binary::<i64>(),
        DataType::BinaryView => a.as_binary_view(),
        _ => return None,
    })
}

/// A wide decimal's unscaled value as Java's `BigInteger.toByteArray()`: big-endian two's complement in the
/// fewest bytes that keep the sign.
fn java_big_integer_bytes(v: i128) -> ([u8; 16], usize) {
    let magnitude_bits = 128 - if v < 0 { (!v).leading_zeros() } else { v.leading_zeros() } as usize;
    let len = magnitude_bits / 8 + 1;
    (v.to_be_bytes(), len)
}

/// Is `v` representable with `precision` digits (`Decimal.changePrecision` fails otherwise and Spark writes
/// null)?
fn fits(v: i128, precision: u8) -> bool {
    let bound = 10i128.pow(precision as u32);
    v > -bound && v < bound
}

/// Appends the batch's rows to `out` (each preceded by its size); returns the number of rows written.
pub fn write_rows(batch: &RecordBatch, out: &mut Vec<u8>) -> Result<usize> {
    let rows = batch.num_rows();
    let columns = batch.columns();
    let fields = columns.len();
    let bitset = fields.div_ceil(64) * 8;
    let fixed = bitset + 8 * fields;
    for c in columns {
        if !supported(c.data_type()) {
            return exec_err!("no UnsafeRow encoding for Arrow type {}", c.data_type());
        }
    }

    // Row sizes: the fixed part plus, column by column, each variable-length value's words.
    let mut sizes = vec![fixed; rows];
    for c in columns {
        if let Some(b) = bytes_of(c) {
            for (i, size) in sizes.iter_mut().enumerate() {
                if let Some(v) = b.bytes_at(i) {
                    *size += round_to_word(v.len());
                }
            }
        } else if let DataType::Decimal128(p, _) = c.data_type() {
            if *p > MAX_LONG_DIGITS {
                sizes.iter_mut().for_each(|s| *s += 16);
            }
        }
    }
    if let Some(s) = sizes.iter().find(|s| **s > i32::MAX as usize) {
        return exec_err!("a row of {s} bytes is larger than an UnsafeRow can be");
    }
    // Where each row starts in `out` (after its size word).
    let base = out.len();
    let mut starts = Vec::with_capacity(rows);
    let mut end = base;
    for s in &sizes {
        starts.push(end + 8);
        end += 8 + s;
    }
    out.resize(end, 0);
    for (start, s) in starts.iter().zip(&sizes) {
        out[start - 8..*start].copy_from_slice(&(*s as u64).to_le_bytes());
    }

    let set_null = |out: &mut [u8], row: usize, field: usize| {
        let word = starts[row] + (field / 64) * 8;
        let mut w = u64::from_le_bytes(out[word..word + 8].try_into().unwrap());
        w |= 1u64 << (field % 64);
        out[word..word + 8].copy_from_slice(&w.to_le_bytes());
    };
    // The next free byte of each row's variable-length region, as an offset from the row's start.
    let mut cursors = vec![fixed; rows];

    // Column by column within tiles of rows: each column is read sequentially, and a tile's rows stay in cache
    // while its columns are written.
    for tile_start in (0..rows).step_by(TILE_ROWS) {
        let tile = tile_start..rows.min(tile_start + TILE_ROWS);
        for (f, c) in columns.iter().enumerate() {
            let slot = |row: usize| starts[row] + bitset + 8 * f;
            macro_rules! fixed_width {
                ($t:ty, $bytes:expr) => {{
                    let a: &PrimitiveArray<$t> = c.as_primitive::<$t>();
                    if a.null_count() == 0 {
                        for i in tile.clone() {
                            let v = a.values()[i];
                            let at = slot(i);
                            out[at..at + $bytes].copy_from_slice(&v.to_le_bytes()[..$bytes]);
                        }
                    } else {
                        for i in tile.clone() {
                            if a.is_null(i) {
                                set_null(out, i, f);
                            } else {
                                let at = slot(i);
                                let v = a.value(i).to_le_bytes();
                                out[at..at + $bytes].copy_from_slice(&v[..$bytes]);
                            }
                        }
                    }
                }};
            }
            match c.data_type() {
                DataType::Null => tile.clone().for_each(|i| set_null(out, i, f)),
                DataType::Boolean => {
                    let a: &BooleanArray = c.as_boolean();
                    for i in tile.clone() {
                        if a.is_null(i) {
                            set_null(out, i, f);
                        } else {
                            out[slot(i)] = a.value(i) as u8;
                        }
                    }
                }
                DataType::Int8 => fixed_width!(Int8Type, 1),
                DataType::Int16 => fixed_width!(Int16Type, 2),
                DataType::Int32 => fixed_width!(Int32Type, 4),
                DataType::Date32 => fixed_width!(Date32Type, 4),
                DataType::Int64 => fixed_width!(Int64Type, 8),
                DataType::Timestamp(_, _) => fixed_width!(TimestampMicrosecondType, 8),
                // Raw bits: Spark's writer stores floats as they are (NaN payloads and -0.0 included).
                DataType::Float32 => fixed_width!(Float32Type, 4),
                DataType::Float64 => fixed_width!(Float64Type, 8),
                DataType::Decimal128(p, _) if *p <= MAX_LONG_DIGITS => {
                    let a: &Decimal128Array = c.as_primitive();
                    for i in tile.clone() {
                        if a.is_null(i) || !fits(a.value(i), *p) {
                            set_null(out, i, f);
                        } else {
                            let at = slot(i);
                            out[at..at + 8].copy_from_slice(&(a.value(i) as i64).to_le_bytes());
                        }
                    }
                }
                DataType::Decimal128(p, _) => {
                    let a: &Decimal128Array = c.as_primitive();
                    for i in tile.clone() {
                        let offset = cursors[i];
                        let len = if a.is_null(i) || !fits(a.value(i), *p) {
                            set_null(out, i, f);
                            0
                        } else {
                            let (bytes, len) = java_big_integer_bytes(a.value(i));
                            let at = starts[i] + offset;
                            out[at..at + len].copy_from_slice(&bytes[16 - len..]);
                            len
                        };
                        let at = slot(i);
                        out[at..at + 8].copy_from_slice(&(((offset as u64) << 32) | len as u64).to_le_bytes());
                        cursors[i] += 16;
                    }
                }
                _ => {
                    let b = bytes_of(c).expect("checked above");
                    for i in tile.clone() {
                        match b.bytes_at(i) {
                            None => set_null(out, i, f),
                            Some(v) => {
                                let offset = cursors[i];
                                let at = starts[i] + offset;
                                out[at..at + v.len()].copy_from_slice(v);
                                let s = slot(i);
                                out[s..s + 8]
                                    .copy_from_slice(&(((offset as u64) << 32) | v.len() as u64).to_le_bytes());
                                cursors[i] += round_to_word(v.len());
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(rows)
}

/// The offset and size of every row in `bytes` (rows as [`write_rows`] lays them out).
fn row_spans(bytes: &[u8]) -> Result<Vec<(usize, usize)>> {
    let mut spans = vec![];
    let mut pos = 0;
    while pos < bytes.len() {
        if pos + 8 > bytes.len() {
            return exec_err!("truncated UnsafeRow buffer at byte {pos}");
        }
        let size = u64::from_le_bytes(bytes[pos..pos + 8].try_into().unwrap()) as usize;
        if !size.is_multiple_of(8) || pos + 8 + size > bytes.len() {
            return exec_err!("bad UnsafeRow size {size} at byte {pos} of {}", bytes.len());
        }
        spans.push((pos + 8, size));
        pos += 8 + size;
    }
    Ok(spans)
}

/// Spark `UnsafeRow`s (each preceded by its size, as [`write_rows`] writes them) → one Arrow batch of `schema`:
/// the inverse of [`write_rows`], for rows a Spark operator hands to a native plan.
pub fn read_rows(bytes: &[u8], schema: &SchemaRef) -> Result<RecordBatch> {
    let spans = row_spans(bytes)?;
    let rows = spans.len();
    let fields = schema.fields().len();
    let bitset = fields.div_ceil(64) * 8;
    for (start, size) in &spans {
        if *size < bitset + 8 * fields {
            return exec_err!("an UnsafeRow of {size} bytes at {start} is too short for {fields} fields");
        }
    }
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let is_null = |row: usize, f: usize| (word(spans[row].0 + (f / 64) * 8) >> (f % 64)) & 1 == 1;
    let slot = |row: usize, f: usize| spans[row].0 + bitset + 8 * f;
    // A variable-length value's bytes, checked against its row.
    let var = |row: usize, f: usize| -> Result<&[u8]> {
        let w = word(slot(row, f));
        let (offset, len) = ((w >> 32) as usize, (w & 0xffff_ffff) as usize);
        let (start, size) = spans[row];
        if offset + len > size {
            return exec_err!("UnsafeRow field {f} points outside its row ({offset} + {len} > {size})");
        }
        Ok(&bytes[start + offset..start + offset + len])
    };
    let nulls = |f: usize| -> Option<NullBuffer> {
        let mut b = NullBufferBuilder::new(rows);
        for r in 0..rows {
            b.append(!is_null(r, f));
        }
        b.finish()
    };
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(fields);
    for (f, field) in schema.fields().iter().enumerate() {
        macro_rules! fixed_width {
            ($t:ty, $native:ty) => {{
                let values: Vec<$native> = (0..rows)
                    .map(|r| {
                        let at = slot(r, f);
                        <$native>::from_le_bytes(bytes[at..at + size_of::<$native>()].try_into().unwrap())
                    })
                    .collect();
                Arc::new(PrimitiveArray::<$t>::new(values.into(), nulls(f)).with_data_type(field.data_type().clone()))
                    as ArrayRef
            }};
        }
        let column: ArrayRef = match field.data_type() {
            DataType::Null => Arc::new(NullArray::new(rows)),
            DataType::Boolean => {
                let values: BooleanBuffer = (0..rows).map(|r| bytes[slot(r, f)] != 0).collect();
                Arc::new(BooleanArray::new(values, nulls(f)))
            }
            DataType::Int8 => fixed_width!(Int8Type, i8),
            DataType::Int16 => fixed_width!(Int16Type, i16),
            DataType::Int32 => fixed_width!(Int32Type, i32),
            DataType::Date32 => fixed_width!(Date32Type, i32),
            DataType::Int64 => fixed_width!(Int64Type, i64),
            DataType::Timestamp(TimeUnit::Microsecond, _) => fixed_width!(TimestampMicrosecondType, i64),
            DataType::Float32 => fixed_width!(Float32Type, f32),
            DataType::Float64 => fixed_width!(Float64Type, f64),
            DataType::Decimal128(p, _) if *p <= MAX_LONG_DIGITS => {
                let values: Vec<i128> = (0..rows).map(|r| word(slot(r, f)) as i64 as i128).collect();
                Arc::new(Decimal128Array::new(values.into(), nulls(f)).with_data_type(field.data_type().clone()))
            }
            DataType::Decimal128(_, _) => {
                let nulls = nulls(f);
                let mut values = Vec::with_capacity(rows);
                for r in 0..rows {
                    if nulls.as_ref().is_some_and(|n| n.is_null(r)) {
                        values.push(0);
                        continue;
                    }
                    let b = var(r, f)?;
                    if b.is_empty() || b.len() > 16 {
                        return exec_err!("a decimal of {} bytes in an UnsafeRow", b.len());
                    }
                    // Big-endian two's complement, sign-extended.
                    let mut full = if b[0] & 0x80 != 0 { [0xffu8; 16] } else { [0u8; 16] };
                    full[16 - b.len()..].copy_from_slice(b);
                    values.push(i128::from_be_bytes(full));
                }
                Arc::new(Decimal128Array::new(values.into(), nulls).with_data_type(field.data_type().clone()))
            }
            DataType::Utf8 | DataType::Binary => {
                let nulls = nulls(f);
                let mut offsets = Vec::with_capacity(rows + 1);
                let mut data = Vec::new();
                offsets.push(0i32);
                for r in 0..rows {
                    if !nulls.as_ref().is_some_and(|n| n.is_null(r)) {
                        data.extend_from_slice(var(r, f)?);
                    }
                    if data.len() > i32::MAX as usize {
                        return exec_err!("more than 2 GiB of strings in one batch: lower spark.ember.batchSize");
                    }
                    offsets.push(data.len() as i32);
                }
                let offsets = OffsetBuffer::new(offsets.into());
                if field.data_type() == &DataType::Utf8 {
                    Arc::new(checked_strings(offsets, data, nulls, field.name())?)
                } else {
                    Arc::new(BinaryArray::new(offsets, data.into(), nulls))
                }
            }
            other => return exec_err!("no UnsafeRow decoding for Arrow type {other}"),
        };
        columns.push(column);
    }
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(schema.clone(), columns, &options)?)
}

/// Spark's string bytes as an Arrow `StringArray`, validated: Spark's `UTF8String` holds any bytes, but every
/// Arrow string kernel assumes valid UTF-8, so invalid bytes must never reach one unchecked. Invalid bytes fail the
/// task with the column and row named.
pub fn checked_strings(
    offsets: OffsetBuffer<i32>,
    data: Vec<u8>,
    nulls: Option<NullBuffer>,
    column: &str,
) -> Result<StringArray> {
    if let Some(row) = first_invalid_utf8(&offsets, &data) {
        return not_utf8(column, row);
    }
    // SAFETY: every value is valid UTF-8 (checked above); the offsets come from `OffsetBuffer`, monotonic and
    // within `data`.
    Ok(unsafe { StringArray::new_unchecked(offsets, data.into(), nulls) })
}

/// The first value of `data` (between consecutive `offsets`) that is not valid UTF-8, or offsets that are not
/// monotonic within `data`; None when every value is valid. The span the offsets cover is validated at once
/// (SIMD), then every offset is checked to fall on a character boundary, which together prove each value valid.
pub(crate) fn first_invalid_utf8<O: arrow::array::OffsetSizeTrait>(offsets: &[O], data: &[u8]) -> Option<usize> {
    let at = |o: &O| o.to_usize().filter(|&o| o <= data.len());
    let (Some(first), Some(last)) = (offsets.first().map(at), offsets.last().map(at)) else { return None };
    let (Some(first), Some(last)) = (first, last) else { return Some(0) };
    let monotonic = offsets.windows(2).all(|w| w[0] <= w[1]);
    let boundary = |o: &O| o.as_usize() == data.len() || (data[o.as_usize()] as i8) >= -0x40;
    if monotonic
        && first <= last
        && simdutf8::basic::from_utf8(&data[first..last]).is_ok()
        && offsets.iter().all(boundary)
    {
        return None;
    }
    let valid = |w: &[O]| match (at(&w[0]), at(&w[1])) {
        (Some(a), Some(b)) if a <= b => std::str::from_utf8(&data[a..b]).is_ok(),
        _ => false,
    };
    Some(offsets.windows(2).position(|w| !valid(w)).unwrap_or(0))
}

/// A string column carried as bytes (`Binary`) as the `Utf8` column it is, without a copy; None when a value
/// is not valid UTF-8.
pub(crate) fn binary_as_text(bytes: &BinaryArray) -> Option<StringArray> {
    if first_invalid_utf8(bytes.value_offsets(), bytes.value_data()).is_some() {
        return None;
    }
    let (offsets, values, nulls) = bytes.clone().into_parts();
    // SAFETY: every value is valid UTF-8 (checked above); the parts come from a valid `BinaryArray`.
    Some(unsafe { StringArray::new_unchecked(offsets, values, nulls) })
}

fn not_utf8<T>(column: &str, row: usize) -> Result<T> {
    exec_err!(
        "string column `{column}` holds bytes that are not valid UTF-8 (row {row} of the batch): Ember's native \
         operators need valid UTF-8 strings; run this query with spark.ember.enabled=false, or read the column \
         as BINARY"
    )
}

/// One column as the plan's input schema types it, where only the string representation differs: a `Utf8`
/// column (valid by construction, or checked when `check_utf8`) into a plan carrying strings as `Binary` is
/// relabelled without a copy; a `Binary` one (a plan carrying strings as bytes made it) into a plan reading them
/// as text is validated (failing as Spark's rows with invalid UTF-8 do). Other columns pass as they are.
pub fn conform_string_column(column: ArrayRef, to: &DataType, name: &str, check_utf8: bool) -> Result<ArrayRef> {
    Ok(match (column.data_type(), to) {
        (DataType::Utf8, DataType::Binary) => {
            Arc::new(BinaryArray::from(column.to_data().into_builder().data_type(DataType::Binary).build()?))
        }
        (DataType::Binary, DataType::Utf8) => {
            let bytes = column.as_binary::<i32>();
            match binary_as_text(bytes) {
                Some(text) => Arc::new(text),
                None => {
                    let row = first_invalid_utf8(bytes.value_offsets(), bytes.value_data()).unwrap_or(0);
                    return not_utf8(name, row);
                }
            }
        }
        (DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View, _) if check_utf8 => {
            if let Some(row) = first_invalid_string(&column)? {
                return not_utf8(name, row);
            }
            column
        }
        _ => column,
    })
}

/// [`conform_string_column`] for every column of `batch`, labelled with `schema` (the plan's input schema).
pub fn conform_strings(batch: RecordBatch, schema: &SchemaRef, check_utf8: bool) -> Result<RecordBatch> {
    let rows = batch.num_rows();
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| conform_string_column(c.clone(), f.data_type(), f.name(), check_utf8))
        .collect::<Result<Vec<_>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    if columns.len() != batch.num_columns() {
        return exec_err!("a batch of {} columns for an input of {}", batch.num_columns(), schema.fields().len());
    }
    Ok(RecordBatch::try_new_with_options(schema.clone(), columns, &options)?)
}

/// The string columns of a batch Spark's JVM exported (the Arrow C stream of a columnar child, whose
/// `UTF8String`s were copied into Arrow vectors as bytes), validated before any operator reads them: the C data
/// interface import trusts the exporter, and Spark's strings need not be valid UTF-8. Only flat columns cross.
/// Errors name the column as `schema` (the plan's input schema) does.
pub fn check_strings(batch: &RecordBatch, schema: &SchemaRef) -> Result<()> {
    let names = schema.fields().iter().map(|f| f.name().as_str()).chain(std::iter::repeat(""));
    for (column, name) in batch.columns().iter().zip(names) {
        if let Some(row) = first_invalid_string(column)? {
            return not_utf8(name, row);
        }
    }
    Ok(())
}

/// The first value of a string column that is not valid UTF-8 (None for any other column), read as bytes.
fn first_invalid_string(column: &ArrayRef) -> Result<Option<usize>> {
    Ok(match column.data_type() {
        DataType::Utf8 => {
            let a = column.as_string::<i32>();
            first_invalid_utf8(a.value_offsets(), a.value_data())
        }
        DataType::LargeUtf8 => {
            let a = column.as_string::<i64>();
            first_invalid_utf8(a.value_offsets(), a.value_data())
        }
        DataType::Utf8View => {
            // As bytes: a view's value is read without building a `&str` from it.
            let bytes = column.to_data().into_builder().data_type(DataType::BinaryView).build()?;
            let a = arrow::array::BinaryViewArray::from(bytes);
            a.iter().position(|v| v.is_some_and(|v| simdutf8::basic::from_utf8(v).is_err()))
        }
        _ => None,
    })
}

/// A Spark child's rows as Arrow batches: `next_rows` fetches the next buffer of `UnsafeRow`s (None at the
/// end), which [`read_rows`] decodes.
pub struct UnsafeRowReader<F> {
    schema: SchemaRef,
    next_rows: F,
}

impl<F: FnMut() -> Result<Option<Vec<u8>>>> UnsafeRowReader<F> {
    pub fn new(schema: SchemaRef, next_rows: F) -> Self {
        Self { schema, next_rows }
    }
}

impl<F: FnMut() -> Result<Option<Vec<u8>>>> Iterator for UnsafeRowReader<F> {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let to_arrow = |e: DataFusionError| ArrowError::ExternalError(Box::new(e));
        match (self.next_rows)() {
            Ok(None) => None,
            Ok(Some(bytes)) => Some(read_rows(&bytes, &self.schema).map_err(to_arrow)),
            Err(e) => Some(Err(to_arrow(e))),
        }
    }
}

impl<F: FnMut() -> Result<Option<Vec<u8>>>> RecordBatchReader for UnsafeRowReader<F> {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{
        BinaryArray, Date32Array, Float32Array, Float64Array, Int32Array, Int64Array, NullArray, StringArray,
        StringViewArray, TimestampMicrosecondArray,
    };
    use arrow::datatypes::{Field, Schema};
    use std::sync::Arc;

    fn rows_of(batch: &RecordBatch) -> Vec<Vec<u8>> {
        let mut out = vec![];
        let n = write_rows(batch, &mut out).unwrap();
        let mut rows = vec![];
        let mut pos = 0;
        while pos < out.len() {
            let size = u64::from_le_bytes(out[pos..pos + 8].try_into().unwrap()) as usize;
            assert!(size.is_multiple_of(8), "rows are whole words");
            rows.push(out[pos + 8..pos + 8 + size].to_vec());
            pos += 8 + size;
        }
        assert_eq!(rows.len(), n);
        rows
    }

    fn word(row: &[u8], i: usize) -> u64 {
        u64::from_le_bytes(row[i * 8..i * 8 + 8].try_into().unwrap())
    }

    fn batch(columns: Vec<ArrayRef>) -> RecordBatch {
        let fields: Vec<Field> =
            columns.iter().enumerate().map(|(i, c)| Field::new(format!("c{i}"), c.data_type().clone(), true)).collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    }

    #[test]
    fn fixed_width_values_and_nulls() {
        let b = batch(vec![
            Arc::new(Int64Array::from(vec![Some(-1), None])),
            Arc::new(Int32Array::from(vec![Some(-2), Some(7)])),
            Arc::new(BooleanArray::from(vec![Some(true), None])),
            Arc::new(Float64Array::from(vec![Some(-0.0), Some(f64::from_bits(0x7ff8_0000_0000_0001))])),
            Arc::new(Float32Array::from(vec![Some(1.5f32), None])),
            Arc::new(Date32Array::from(vec![Some(-719162), None])),
            Arc::new(TimestampMicrosecondArray::from(vec![Some(i64::MIN), None]).with_timezone("UTC")),
            Arc::new(NullArray::new(2)),
        ]);
        let rows = rows_of(&b);
        // 8 fields: one bitset word + 8 slots.
        assert_eq!(rows[0].len(), 72);
        assert_eq!(word(&rows[0], 0), 1 << 7);
        assert_eq!(word(&rows[0], 1), u64::MAX);
        // An int keeps the slot's high bytes zero (Spark zeroes the slot, then writes 4 bytes).
        assert_eq!(word(&rows[0], 2), (-2i32) as u32 as u64);
        assert_eq!(word(&rows[0], 3), 1);
        assert_eq!(word(&rows[0], 4), (-0.0f64).to_bits());
        assert_eq!(word(&rows[0], 5), 1.5f32.to_bits() as u64);
        assert_eq!(word(&rows[0], 6), (-719162i32) as u32 as u64);
        assert_eq!(word(&rows[0], 7), i64::MIN as u64);
        assert_eq!(word(&rows[0], 8), 0);
        assert_eq!(word(&rows[1], 0), 0b1111_0101);
        assert_eq!(word(&rows[1], 2), 7);
        assert_eq!(word(&rows[1], 4), 0x7ff8_0000_0000_0001, "NaN payload kept");
        for s in [1, 3, 5, 6, 7, 8] {
            assert_eq!(word(&rows[1], s), 0, "null slot {s} is zero");
        }
    }

    #[test]
    fn strings_are_padded_words_in_field_order() {
        let b = batch(vec![
            Arc::new(StringArray::from(vec![Some("héllo, world"), None, Some("")])),
            Arc::new(Int64Array::from(vec![1, 2, 3])),
            Arc::new(BinaryArray::from(vec![Some(&b"\x00\x01"[..]), Some(&b"abcdefgh"[..]), None])),
            Arc::new(StringViewArray::from(vec![Some("a string longer than twelve bytes"), Some("x"), None])),
        ]);
        let rows = rows_of(&b);
        let fixed = 8 + 4 * 8;
        let r = &rows[0];
        let s = "héllo, world".as_bytes();
        assert_eq!(word(r, 1), ((fixed as u64) << 32) | s.len() as u64);
        assert_eq!(&r[fixed..fixed + s.len()], s);
        assert!(r[fixed + s.len()..fixed + 16].iter().all(|b| *b == 0), "padding is zero");
        assert_eq!(word(r, 3), (((fixed + 16) as u64) << 32) | 2);
        assert_eq!(word(r, 4), (((fixed + 24) as u64) << 32) | 33);
        assert_eq!(r.len(), fixed + 16 + 8 + 40);
        let r = &rows[1];
        assert_eq!(word(r, 0), 1);
        assert_eq!(word(r, 1), 0);
        assert_eq!(word(r, 3), ((fixed as u64) << 32) | 8);
        assert_eq!(r.len(), fixed + 8 + 8);
        // An empty string: offset at the cursor, length 0, no words.
        let r = &rows[2];
        assert_eq!(word(r, 1), (fixed as u64) << 32);
        assert_eq!(word(r, 0), 0b1100);
        assert_eq!(r.len(), fixed);
    }

    #[test]
    fn decimals_narrow_and_wide() {
        let narrow = Decimal128Array::from(vec![Some(-12345), None, Some(10i128.pow(18))])
            .with_precision_and_scale(18, 2)
            .unwrap();
        let wide = Decimal128Array::from(vec![Some(-1), Some(0), None]).with_precision_and_scale(38, 10).unwrap();
        let wide2 = Decimal128Array::from(vec![Some(i128::from(i64::MAX) + 1), Some(255), Some(-129)])
            .with_precision_and_scale(20, 0)
            .unwrap();
        let rows = rows_of(&batch(vec![Arc::new(narrow), Arc::new(wide), Arc::new(wide2)]));
        let fixed = 8 + 3 * 8;
        let r = &rows[0];
        assert_eq!(word(r, 1), (-12345i64) as u64);
        // BigInteger(-1).toByteArray() = [0xff]
        assert_eq!(word(r, 2), ((fixed as u64) << 32) | 1);
        assert_eq!(r[fixed], 0xff);
        assert!(r[fixed + 1..fixed + 16].iter().all(|b| *b == 0));
        // 2^63 = [0x00, 0x80, 0, 0, 0, 0, 0, 0, 0]
        assert_eq!(word(r, 3), (((fixed + 16) as u64) << 32) | 9);
        assert_eq!(&r[fixed + 16..fixed + 25], &[0, 0x80, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(r.len(), fixed + 32);
        let r = &rows[1];
        assert_eq!(word(r, 0), 0b1);
        // BigInteger(0) = [0]; 255 = [0x00, 0xff]
        assert_eq!(word(r, 2), ((fixed as u64) << 32) | 1);
        assert_eq!(word(r, 3), (((fixed + 16) as u64) << 32) | 2);
        assert_eq!(&r[fixed + 16..fixed + 18], &[0x00, 0xff]);
        // A null wide decimal keeps its 16 bytes and its offset, length 0; a narrow value beyond its precision
        // is null, as Decimal.changePrecision makes it.
        let r = &rows[2];
        assert_eq!(word(r, 0), 0b11);
        assert_eq!(word(r, 1), 0);
        assert_eq!(word(r, 2), (fixed as u64) << 32);
        // -129 = [0xff, 0x7f]
        assert_eq!(word(r, 3), (((fixed + 16) as u64) << 32) | 2);
        assert_eq!(&r[fixed + 16..fixed + 18], &[0xff, 0x7f]);
        assert_eq!(r.len(), fixed + 32);
    }

    #[test]
    fn many_fields_and_empty_batches() {
        let cols: Vec<ArrayRef> =
            (0..70).map(|i| Arc::new(Int64Array::from(vec![None, Some(i)])) as ArrayRef).collect();
        let rows = rows_of(&batch(cols));
        assert_eq!(rows[0].len(), 16 + 70 * 8);
        assert_eq!(word(&rows[0], 0), u64::MAX);
        assert_eq!(word(&rows[0], 1), (1 << 6) - 1);
        assert_eq!(word(&rows[1], 0), 0);
        assert_eq!(word(&rows[1], 2 + 69), 69);
        let empty = batch(vec![Arc::new(Int64Array::from(Vec::<i64>::new()))]);
        assert!(rows_of(&empty).is_empty());
    }

    /// Strings the JVM exported over the C stream interface: every value checked, the failing row named, a
    /// slice checked only over its own values.
    #[test]
    fn exported_strings_are_checked() {
        // What the C data interface import makes of a JVM `VarCharVector`: a `StringArray` nobody validated.
        let unchecked = |values: Vec<&[u8]>| -> ArrayRef {
            let offsets = OffsetBuffer::from_lengths(values.iter().map(|v| v.len()));
            // SAFETY: a test double of an unvalidated import; only `check_strings` reads it, as bytes.
            Arc::new(unsafe { StringArray::new_unchecked(offsets, values.concat().into(), None) })
        };
        // Exported as `c0`, named `s` in the plan.
        let of = |column: ArrayRef| {
            let exported = Schema::new(vec![Field::new("c0", column.data_type().clone(), true)]);
            RecordBatch::try_new(Arc::new(exported), vec![column]).unwrap()
        };
        let plan = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, true)]));
        let check_strings = |b: &RecordBatch| check_strings(b, &plan);
        assert!(check_strings(&of(unchecked(vec![b"", "ü€😀".as_bytes(), b"plain"]))).is_ok());
        let bad = of(unchecked(vec![b"fine", b"ok", &[0xc3], &[0xbc]]));
        let err = check_strings(&bad).unwrap_err().to_string();
        assert!(err.contains("string column `s`") && err.contains("(row 2 of the batch)"), "{err}");
        assert!(check_strings(&bad.slice(0, 2)).is_ok());
        assert!(check_strings(&bad.slice(1, 3)).is_err());
        let views = arrow::compute::cast(&unchecked(vec![b"a", "é".as_bytes()]), &DataType::Utf8View).unwrap();
        assert!(check_strings(&of(views)).is_ok());
        let views =
            of(Arc::new(arrow::array::BinaryViewArray::from(vec![&b"long enough to be out of line"[..], &[0xff]])));
        let views = arrow::compute::cast(views.column(0), &DataType::BinaryView).unwrap();
        let relabelled = arrow::array::make_array(unsafe {
            views.to_data().into_builder().data_type(DataType::Utf8View).build_unchecked()
        });
        assert!(check_strings(&of(relabelled)).unwrap_err().to_string().contains("(row 1 of the batch)"));
        // Other types pass untouched.
        assert!(check_strings(&of(Arc::new(BinaryArray::from(vec![&[0xff_u8][..]])))).is_ok());
    }

    /// Spark's strings are bytes: invalid UTF-8 in a string column is an error naming the column and row, never
    /// an unchecked `StringArray` (and valid multi-byte strings pass).
    #[test]
    fn invalid_utf8_in_a_string_column_is_an_error() {
        let string_schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, true)]));
        let read_as_strings = |values: Vec<Option<&[u8]>>| {
            let mut bytes = vec![];
            write_rows(&batch(vec![Arc::new(BinaryArray::from(values))]), &mut bytes).unwrap();
            read_rows(&bytes, &string_schema)
        };
        let ok = read_as_strings(vec![Some("ü€😀".as_bytes()), None, Some(b""), Some(b"plain")]).unwrap();
        assert_eq!(ok.column(0).as_string::<i32>().value(0), "ü€😀");
        let bad: Vec<Vec<Option<&[u8]>>> = vec![
            vec![Some(b"fine"), Some(&[0xff, 0x41])],
            // Valid once concatenated ("ü" = C3 BC), invalid as two values: the boundary check catches it.
            vec![Some(&[0xc3]), Some(&[0xbc])],
            vec![Some(&[0xed, 0xa0, 0x80])], // a UTF-16 surrogate
        ];
        for values in bad {
            let err = read_as_strings(values).unwrap_err().to_string();
            assert!(err.contains("string column `s`") && err.contains("not valid UTF-8"), "{err}");
        }
    }

    #[test]
    fn rows_read_back_as_the_same_batch() {
        let n = 1000;
        let pick = |i: usize| i % 7 != 3;
        let wide = Decimal128Array::from_iter((0..n).map(|i| {
            pick(i).then(|| match i % 5 {
                0 => 10i128.pow(38) - 1,
                1 => -(10i128.pow(38) - 1),
                2 => 0,
                _ => (i as i128 - 500) * 1_000_000_007_000_000_009,
            })
        }))
        .with_precision_and_scale(38, 10)
        .unwrap();
        let narrow = Decimal128Array::from_iter((0..n).map(|i| pick(i + 1).then(|| i as i128 * 12345 - 99)))
            .with_precision_and_scale(12, 2)
            .unwrap();
        let b = batch(vec![
            Arc::new(Int64Array::from_iter((0..n).map(|i| pick(i).then_some(i as i64 * -7919)))),
            Arc::new(BooleanArray::from_iter((0..n).map(|i| pick(i + 2).then_some(i % 3 == 0)))),
            Arc::new(arrow::array::Int8Array::from_iter((0..n).map(|i| pick(i + 3).then_some(i as i8)))),
            Arc::new(arrow::array::Int16Array::from_iter((0..n).map(|i| pick(i + 4).then_some(-(i as i16))))),
            Arc::new(Int32Array::from_iter((0..n).map(|i| pick(i + 5).then_some(i as i32 - 500)))),
            Arc::new(Float32Array::from_iter(
                (0..n).map(|i| pick(i + 6).then_some(f32::from_bits((i as u32).wrapping_mul(2654435761)))),
            )),
            Arc::new(Float64Array::from_iter(
                (0..n).map(|i| pick(i).then_some(f64::from_bits((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)))),
            )),
            Arc::new(narrow),
            Arc::new(wide),
            Arc::new(StringArray::from_iter((0..n).map(|i| pick(i + 1).then(|| "ü".repeat(i % 13))))),
            Arc::new(BinaryArray::from_iter((0..n).map(|i| pick(i + 2).then(|| vec![i as u8; i % 17])))),
            Arc::new(Date32Array::from_iter((0..n).map(|i| pick(i + 3).then_some(i as i32 * 97 - 719162)))),
            Arc::new(
                TimestampMicrosecondArray::from_iter((0..n).map(|i| pick(i + 4).then_some(i as i64 * 1_000_003)))
                    .with_timezone("America/Los_Angeles"),
            ),
            Arc::new(NullArray::new(n)),
        ]);
        let mut bytes = vec![];
        write_rows(&b, &mut bytes).unwrap();
        let back = read_rows(&bytes, &b.schema()).unwrap();
        assert_eq!(back, b);
        // Zero columns: only the row count crosses.
        let none = RecordBatch::try_new_with_options(
            Arc::new(Schema::empty()),
            vec![],
            &RecordBatchOptions::new().with_row_count(Some(5)),
        )
        .unwrap();
        let mut bytes = vec![];
        write_rows(&none, &mut bytes).unwrap();
        assert_eq!(read_rows(&bytes, &none.schema()).unwrap().num_rows(), 5);
        // Truncated or inconsistent buffers are errors, not panics.
        assert!(read_rows(&bytes[..bytes.len() - 3], &none.schema()).is_err());
        let mut bytes = vec![];
        write_rows(&b, &mut bytes).unwrap();
        assert!(read_rows(&bytes[..100], &b.schema()).is_err());
    }
}
