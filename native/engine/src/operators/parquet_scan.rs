//! Spark's Parquet scan, read natively: each task gets its file splits (path, start, length — Spark's own
//! `FilePartition`s) and the requested columns, and reads them with arrow-rs's Parquet reader straight into
//! Arrow batches, instead of Spark's vectorized reader filling JVM column vectors that are then copied into
//! Arrow.
//!
//! Spark semantics kept here:
//! - **Splits.** A file split into several ranges reads each row group in exactly one of them: the one holding
//!   the row group's midpoint (parquet-mr's rule), so the splits of a file cover its rows once.
//! - **Columns by name**, case-insensitively unless `spark.sql.caseSensitive`; two file columns that differ only
//!   in case are an error in case-insensitive mode, as in Spark. A requested column missing from a file reads as
//!   NULLs (schema evolution).
//! - **Types.** A file column whose type differs from the requested one is widened only where that is exact
//!   (smaller integers to larger ones or to DOUBLE, FLOAT to DOUBLE, a decimal to one of the same scale and
//!   larger precision, string and binary encodings); anything else fails the task with the column and file
//!   named.
//! - **Filters** are not applied: Spark keeps every data filter of a file scan in a filter above it.
//!
//! Which scans come here (flat schemas of non-temporal types, no partition columns, local files) is decided on
//! the JVM side; everything else stays Spark's scan.

use std::collections::VecDeque;
use std::fs::File;

use arrow::array::{new_null_array, ArrayRef, RecordBatch, RecordBatchOptions, RecordBatchReader};
use arrow::compute::{cast_with_options, CastOptions};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::error::ArrowError;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader};
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::RowGroupMetaData;

use crate::error::SparkError;

/// One byte range of one file, as Spark's `PartitionedFile`.
#[derive(Debug, Clone, PartialEq)]
pub struct ParquetSplit {
    pub path: String,
    pub start: i64,
    pub length: i64,
    /// The file as Spark names it in its errors (`PartitionedFile.urlEncodedPath`); empty: `path`.
    pub display_path: String,
}

impl ParquetSplit {
    fn name(&self) -> &str {
        if self.display_path.is_empty() {
            &self.path
        } else {
            &self.display_path
        }
    }
}

/// A read error as Spark's `FileScanRDD` raises it: `FAILED_READ_FILE.NO_HINT` naming the file.
fn failed_read(path: &str, e: impl std::fmt::Display) -> ArrowError {
    ArrowError::ExternalError(Box::new(SparkError::failed_read_file(path, e)))
}

/// Spark's `DataType.catalogString` of the Arrow type a Spark column is read into.
fn spark_type_name(dt: &DataType) -> String {
    match dt {
        DataType::Boolean => "boolean".into(),
        DataType::Int8 => "tinyint".into(),
        DataType::Int16 => "smallint".into(),
        DataType::Int32 => "int".into(),
        DataType::Int64 => "bigint".into(),
        DataType::Float32 => "float".into(),
        DataType::Float64 => "double".into(),
        DataType::Utf8 => "string".into(),
        DataType::Binary => "binary".into(),
        DataType::Date32 => "date".into(),
        DataType::Decimal128(p, s) => format!("decimal({p},{s})"),
        DataType::Timestamp(_, Some(_)) => "timestamp".into(),
        DataType::Timestamp(_, None) => "timestamp_ntz".into(),
        other => other.to_string(),
    }
}

/// Where a requested column comes from in the current file.
#[derive(Debug, Clone, PartialEq)]
enum ColumnSource {
    /// Position in the projected batch, and the type to cast to when the file's differs.
    File { index: usize, cast_to: Option<DataType> },
    /// Not in the file: NULLs.
    Missing,
}

struct OpenSplit {
    reader: ParquetRecordBatchReader,
    columns: Vec<ColumnSource>,
    path: String,
}

/// The batches of a task's splits, in order, as the plan's input schema (Spark's requested schema).
pub struct ParquetScanReader<F> {
    schema: SchemaRef,
    /// The requested columns' names as Spark resolved them (the schema's own names may be positional).
    names: Vec<String>,
    case_sensitive: bool,
    batch_size: usize,
    splits: VecDeque<ParquetSplit>,
    current: Option<OpenSplit>,
    /// Set after an error: the reader ends there.
    failed: bool,
    alive: F,
}

impl<F: FnMut() -> datafusion_common::Result<()>> ParquetScanReader<F> {
    pub fn new(
        schema: SchemaRef,
        names: Vec<String>,
        case_sensitive: bool,
        splits: Vec<ParquetSplit>,
        batch_size: usize,
        alive: F,
    ) -> Result<Self, ArrowError> {
        if names.len() != schema.fields().len() {
            return Err(ArrowError::SchemaError(format!(
                "a Parquet scan of {} columns named {} columns",
                schema.fields().len(),
                names.len()
            )));
        }
        Ok(Self {
            schema,
            names,
            case_sensitive,
            batch_size: batch_size.max(1),
            splits: splits.into(),
            current: None,
            failed: false,
            alive,
        })
    }

    /// Opens the next split that has row groups of its own; None when none is left.
    fn open_next(&mut self) -> Result<Option<OpenSplit>, ArrowError> {
        while let Some(split) = self.splits.pop_front() {
            let file_name = split.name().to_string();
            let context = |e: &dyn std::fmt::Display| failed_read(&file_name, e);
            let file = File::open(&split.path).map_err(|e| context(&e))?;
            // Spark writes no Arrow schema into its files; one written by another tool is ignored too, so a
            // column reads as its Parquet type says (strings as Utf8, not whichever view type a writer chose).
            let options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
            let meta = ArrowReaderMetadata::load(&file, options).map_err(|e| context(&e))?;
            let end = split.start.saturating_add(split.length);
            let row_groups: Vec<usize> = meta
                .metadata()
                .row_groups()
                .iter()
                .enumerate()
                .filter(|(_, rg)| (split.start..end).contains(&midpoint(rg)))
                .map(|(i, _)| i)
                .collect();
            if row_groups.is_empty() {
                continue;
            }
            let file_schema = meta.schema().clone();
            let mut roots = Vec::new();
            let mut wanted = Vec::with_capacity(self.names.len());
            for (name, field) in self.names.iter().zip(self.schema.fields()) {
                let matches: Vec<usize> =
                    file_schema
                        .fields()
                        .iter()
                        .enumerate()
                        .filter(|(_, f)| {
                            if self.case_sensitive {
                                f.name() == name
                            } else {
                                f.name().eq_ignore_ascii_case(name)
                            }
                        })
                        .map(|(i, _)| i)
                        .collect();
                match matches.as_slice() {
                    [] => wanted.push(None),
                    [i] => {
                        let found = file_schema.field(*i).data_type();
                        let cast_to = if found == field.data_type() {
                            None
                        } else if exact_widening(found, field.data_type()) {
                            Some(field.data_type().clone())
                        } else {
                            let root = &meta.parquet_schema().root_schema().get_fields()[*i];
                            let actual = if root.is_primitive() {
                                root.get_physical_type().to_string()
                            } else {
                                found.to_string()
                            };
                            let column = format!("[{}]", file_schema.field(*i).name());
                            let expected = spark_type_name(field.data_type());
                            return Err(ArrowError::ExternalError(Box::new(
                                SparkError::parquet_column_data_type_mismatch(&file_name, &column, &expected, &actual),
                            )));
                        };
                        roots.push(*i);
                        wanted.push(Some((*i, cast_to)));
                    }
                    many => {
                        let found: Vec<&str> = many.iter().map(|i| file_schema.field(*i).name().as_str()).collect();
                        return Err(context(&format!(
                            "Found duplicate field(s) \"{name}\": [{}] in case-insensitive mode",
                            found.join(", ")
                        )));
                    }
                }
            }
            roots.sort_unstable();
            roots.dedup();
            // The projected batch holds the chosen roots in file order.
            let columns = wanted
                .into_iter()
                .map(|w| match w {
                    None => ColumnSource::Missing,
                    Some((root, cast_to)) => {
                        ColumnSource::File { index: roots.binary_search(&root).expect("chosen root"), cast_to }
                    }
                })
                .collect();
            let mask = ProjectionMask::roots(meta.parquet_schema(), roots);
            let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta)
                .with_projection(mask)
                .with_row_groups(row_groups)
                .with_batch_size(self.batch_size)
                .build()
                .map_err(|e| context(&e))?;
            return Ok(Some(OpenSplit { reader, columns, path: file_name }));
        }
        Ok(None)
    }

    fn next_batch(&mut self) -> Option<Result<RecordBatch, ArrowError>> {
        loop {
            if let Err(e) = (self.alive)() {
                return Some(Err(ArrowError::ExternalError(Box::new(e))));
            }
            if self.current.is_none() {
                match self.open_next() {
                    Ok(Some(open)) => self.current = Some(open),
                    Ok(None) => return None,
                    Err(e) => return Some(Err(e)),
                }
            }
            let open = self.current.as_mut().expect("an open split");
            match open.reader.next() {
                Some(Ok(batch)) => {
                    let open = self.current.as_ref().expect("an open split");
                    return Some(self.convert(open, batch));
                }
                Some(Err(e)) => return Some(Err(failed_read(&open.path, e))),
                None => self.current = None,
            }
        }
    }

    fn convert(&self, open: &OpenSplit, batch: RecordBatch) -> Result<RecordBatch, ArrowError> {
        let rows = batch.num_rows();
        let columns = open
            .columns
            .iter()
            .zip(self.schema.fields())
            .map(|(source, field)| match source {
                ColumnSource::Missing => Ok(new_null_array(field.data_type(), rows)),
                ColumnSource::File { index, cast_to: None } => Ok(batch.column(*index).clone()),
                // Not `safe`: a value the conversion cannot make (invalid UTF-8 in BINARY read as STRING) is an
                // error, never a NULL in its place.
                ColumnSource::File { index, cast_to: Some(to) } => {
                    cast_with_options(batch.column(*index), to, &CastOptions { safe: false, ..Default::default() })
                        .map_err(|e| failed_read(&open.path, format!("column {}: {e}", field.name())))
                }
            })
            .collect::<Result<Vec<ArrayRef>, _>>()?;
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )
    }
}

/// parquet-mr's split rule: a row group belongs to the split holding its midpoint, measured from its first
/// page (the first column's dictionary page when it comes first).
fn midpoint(rg: &RowGroupMetaData) -> i64 {
    let start = if rg.num_columns() == 0 {
        rg.file_offset().unwrap_or(0)
    } else {
        let c = rg.column(0);
        match c.dictionary_page_offset() {
            Some(d) if d < c.data_page_offset() => d,
            _ => c.data_page_offset(),
        }
    };
    start + rg.compressed_size() / 2
}

/// Conversions of a file column to the requested type that change no value: Spark's vectorized reader
/// accepts them too.
fn exact_widening(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    let int_rank = |t: &DataType| match t {
        Int8 => Some(1),
        Int16 => Some(2),
        Int32 => Some(3),
        Int64 => Some(4),
        _ => None,
    };
    match (from, to) {
        (a, b) if int_rank(a).is_some() && int_rank(b).is_some() => int_rank(a) < int_rank(b),
        (Int8 | Int16 | Int32, Float64) | (Float32, Float64) => true,
        (Decimal32(p1, s1) | Decimal64(p1, s1) | Decimal128(p1, s1), Decimal128(p2, s2)) => s1 == s2 && p1 <= p2,
        (LargeUtf8 | Utf8View, Utf8) | (LargeBinary | BinaryView, Binary) => true,
        // BYTE_ARRAY either way: a UTF8-annotated column read as BINARY, or an unannotated one as STRING (as
        // Spark's binaryAsString does). Invalid UTF-8 fails the task here, where Spark reads the bytes as they are.
        (Utf8, Binary) | (Binary, Utf8) => true,
        _ => false,
    }
}

impl<F: FnMut() -> datafusion_common::Result<()>> Iterator for ParquetScanReader<F> {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let result = self.next_batch();
        if let Some(Err(_)) = result {
            self.failed = true;
            self.splits.clear();
            self.current = None;
        }
        result
    }
}

impl<F: FnMut() -> datafusion_common::Result<()>> RecordBatchReader for ParquetScanReader<F> {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{AsArray, Int32Array, Int64Array, StringArray};
    use arrow::datatypes::{Field, Int64Type, Schema};
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;
    use std::sync::Arc;

    /// A file of `rows` rows (columns `Id` BIGINT, `v` INT with every 7th NULL, `s` STRING) in row groups of
    /// `group` rows; returns its path and size.
    fn write_file(dir: &std::path::Path, rows: i64, group: usize) -> (String, i64) {
        let schema = Arc::new(Schema::new(vec![
            Field::new("Id", DataType::Int64, false),
            Field::new("v", DataType::Int32, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        let path = dir.join(format!("f{rows}_{group}.parquet"));
        let props = WriterProperties::builder().set_max_row_group_row_count(Some(group)).build();
        let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), schema.clone(), Some(props)).unwrap();
        let ids: Vec<i64> = (0..rows).collect();
        let v: Int32Array = ids.iter().map(|i| if i % 7 == 0 { None } else { Some(*i as i32 * 3) }).collect();
        let s: StringArray = ids.iter().map(|i| Some(format!("row {i}"))).collect();
        let batch =
            RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(ids)), Arc::new(v), Arc::new(s)]).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let size = std::fs::metadata(&path).unwrap().len() as i64;
        (path.to_str().unwrap().to_string(), size)
    }

    fn read(
        fields: Vec<Field>,
        names: &[&str],
        case_sensitive: bool,
        splits: Vec<ParquetSplit>,
        batch: usize,
    ) -> Result<Vec<RecordBatch>, ArrowError> {
        let schema = Arc::new(Schema::new(fields));
        let names = names.iter().map(|s| s.to_string()).collect();
        ParquetScanReader::new(schema, names, case_sensitive, splits, batch, || Ok(()))?.collect()
    }

    fn ids(batches: &[RecordBatch], col: usize) -> Vec<i64> {
        batches.iter().flat_map(|b| b.column(col).as_primitive::<Int64Type>().values().to_vec()).collect()
    }

    #[test]
    fn splits_read_every_row_group_once() {
        let dir = tempfile::tempdir().unwrap();
        let (path, size) = write_file(dir.path(), 10_000, 700);
        for parts in [1i64, 2, 3, 7, 40] {
            let step = size / parts + 1;
            let splits: Vec<ParquetSplit> = (0..parts)
                .map(|k| ParquetSplit {
                    path: path.clone(),
                    start: k * step,
                    length: step.min(size - k * step),
                    display_path: String::new(),
                })
                .collect();
            let mut got: Vec<i64> = Vec::new();
            let mut non_empty = 0;
            for split in splits {
                let b = read(vec![Field::new("c0", DataType::Int64, true)], &["id"], false, vec![split], 1000).unwrap();
                non_empty += usize::from(!b.is_empty());
                got.extend(ids(&b, 0));
            }
            got.sort_unstable();
            assert_eq!(got, (0..10_000).collect::<Vec<_>>(), "{parts} splits");
            assert!(non_empty <= 15 && non_empty >= parts.min(15) as usize / 2, "{parts} splits: {non_empty}");
        }
    }

    #[test]
    fn columns_by_name_missing_widened_and_batch_sizes() {
        let dir = tempfile::tempdir().unwrap();
        let (path, size) = write_file(dir.path(), 1000, 300);
        let split = vec![ParquetSplit { path, start: 0, length: size, display_path: String::new() }];
        let fields = vec![
            Field::new("c0", DataType::Utf8, true),
            Field::new("c1", DataType::Int64, true),   // v: INT widened to BIGINT
            Field::new("c2", DataType::Float64, true), // not in the file: NULLs
            Field::new("c3", DataType::Int64, true),
        ];
        let batches = read(fields.clone(), &["S", "V", "gone", "ID"], false, split.clone(), 128).unwrap();
        assert!(batches.iter().all(|b| b.num_rows() <= 128));
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 1000);
        assert_eq!(ids(&batches, 3), (0..1000).collect::<Vec<_>>());
        let v: Vec<Option<i64>> =
            batches.iter().flat_map(|b| b.column(1).as_primitive::<Int64Type>().iter().collect::<Vec<_>>()).collect();
        assert_eq!(v[0], None);
        assert_eq!(v[8], Some(24));
        assert_eq!(batches[0].column(0).as_string::<i32>().value(5), "row 5");
        assert!(batches.iter().all(|b| b.column(2).null_count() == b.num_rows()));
        // Case-sensitive: "ID" is not "Id", so it is missing.
        let cs = read(fields, &["s", "v", "gone", "ID"], true, split.clone(), 1000).unwrap();
        assert!(cs.iter().all(|b| b.column(3).null_count() == b.num_rows()));
        // No columns at all (count(*)): row counts only.
        let none = read(vec![], &[], false, split.clone(), 1000).unwrap();
        assert_eq!(none.iter().map(|b| b.num_rows()).sum::<usize>(), 1000);
        // A string column read as BINARY.
        let bin = read(vec![Field::new("c0", DataType::Binary, true)], &["s"], false, split.clone(), 1000).unwrap();
        assert_eq!(bin[0].column(0).as_binary::<i32>().value(3), b"row 3");
        // A narrowing is refused with the column and file named.
        let err = read(vec![Field::new("c0", DataType::Int32, true)], &["id"], false, split, 1000).unwrap_err();
        assert!(err.to_string().contains("Column: [Id]"), "{err}");
    }

    /// An unannotated BINARY column read as STRING: valid values come through; a value that is not UTF-8 fails
    /// the read naming file and column — never a NULL in its place.
    #[test]
    fn binary_read_as_string_never_turns_invalid_utf8_into_null() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, values: Vec<Option<&[u8]>>| {
            let schema = Arc::new(Schema::new(vec![Field::new("b", DataType::Binary, true)]));
            let path = dir.path().join(name);
            let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), schema.clone(), None).unwrap();
            let col = Arc::new(arrow::array::BinaryArray::from(values));
            w.write(&RecordBatch::try_new(schema, vec![col]).unwrap()).unwrap();
            w.close().unwrap();
            vec![ParquetSplit {
                path: path.to_str().unwrap().to_string(),
                start: 0,
                length: 1 << 20,
                display_path: String::new(),
            }]
        };
        let as_string = || vec![Field::new("c0", DataType::Utf8, true)];
        let good = read(as_string(), &["b"], false, write("good.parquet", vec![Some("ü€".as_bytes()), None]), 10);
        let good = good.unwrap();
        assert_eq!(good[0].column(0).as_string::<i32>().value(0), "ü€");
        assert!(good[0].column(0).is_null(1));
        let bad = write("bad.parquet", vec![Some(b"ok"), Some(&[0xff, 0xfe]), None]);
        let err = read(as_string(), &["b"], false, bad, 10).unwrap_err().to_string();
        assert!(err.contains("bad.parquet") && err.contains("column c0"), "{err}");
    }

    #[test]
    fn duplicate_names_in_case_insensitive_mode_and_bad_files_fail_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let schema =
            Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, true), Field::new("A", DataType::Int64, true)]));
        let path = dir.path().join("dup.parquet");
        let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), schema.clone(), None).unwrap();
        let col = Arc::new(Int64Array::from(vec![1, 2]));
        w.write(&RecordBatch::try_new(schema, vec![col.clone(), col]).unwrap()).unwrap();
        w.close().unwrap();
        let p = path.to_str().unwrap().to_string();
        let split = vec![ParquetSplit { path: p.clone(), start: 0, length: 1 << 20, display_path: String::new() }];
        let field = || vec![Field::new("c0", DataType::Int64, true)];
        let err = read(field(), &["a"], false, split.clone(), 10).unwrap_err();
        assert!(err.to_string().contains("Found duplicate field(s) \"a\": [a, A]"), "{err}");
        assert_eq!(ids(&read(field(), &["A"], true, split, 10).unwrap(), 0), vec![1, 2]);
        let missing =
            vec![ParquetSplit { path: format!("{p}.nope"), start: 0, length: 1, display_path: String::new() }];
        assert!(read(field(), &["a"], false, missing, 10).unwrap_err().to_string().contains(".nope"));
        let junk = dir.path().join("junk.parquet");
        std::fs::write(&junk, b"not parquet at all").unwrap();
        let split = vec![ParquetSplit {
            path: junk.to_str().unwrap().into(),
            start: 0,
            length: 18,
            display_path: String::new(),
        }];
        assert!(read(field(), &["a"], false, split, 10).unwrap_err().to_string().contains("junk.parquet"));
    }

    /// Read errors carry Spark's error classes and name the file as Spark does (its display path).
    #[test]
    fn read_errors_are_sparks_failed_read_file_conditions() {
        let dir = tempfile::tempdir().unwrap();
        let (path, size) = write_file(dir.path(), 100, 100);
        let class_of = |e: ArrowError| match e {
            ArrowError::ExternalError(inner) => {
                let spark = inner.downcast::<SparkError>().expect("a Spark error");
                (spark.error_class.clone(), spark.params.clone())
            }
            other => panic!("not a Spark error: {other}"),
        };
        let split = |p: &str, length: i64| {
            vec![ParquetSplit { path: p.to_string(), start: 0, length, display_path: format!("file://{p}") }]
        };
        let int = vec![Field::new("c0", DataType::Int32, true)];
        let (class, params) = class_of(read(int, &["Id"], false, split(&path, size), 10).unwrap_err());
        assert_eq!(class, "FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH");
        let expected: Vec<(String, String)> = [
            ("path", format!("file://{path}")),
            ("column", "[Id]".into()),
            ("expectedType", "int".into()),
            ("actualType", "INT64".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(params, expected);
        let junk = dir.path().join("junk.parquet");
        std::fs::write(&junk, b"not parquet at all").unwrap();
        let long = || vec![Field::new("c0", DataType::Int64, true)];
        let (class, params) = class_of(read(long(), &["a"], false, split(junk.to_str().unwrap(), 18), 10).unwrap_err());
        assert_eq!(class, "FAILED_READ_FILE.NO_HINT");
        assert_eq!(params, vec![("path".to_string(), format!("file://{}", junk.to_str().unwrap()))]);
    }

    #[test]
    fn stops_when_the_task_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let (path, size) = write_file(dir.path(), 1000, 1000);
        let schema = Arc::new(Schema::new(vec![Field::new("c0", DataType::Int64, true)]));
        let split = vec![ParquetSplit { path, start: 0, length: size, display_path: String::new() }];
        let killed = crate::operators::shared::killed_after(2);
        let reader = ParquetScanReader::new(schema, vec!["id".into()], false, split, 100, killed).unwrap();
        let got: Vec<_> = reader.collect();
        assert_eq!(got.len(), 3);
        assert!(got[2].as_ref().unwrap_err().to_string().contains("task killed"));
    }
}
