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
//! - **Dates and timestamps** as Spark's vectorized reader reads them: DATE as days; INT64 TIMESTAMP(MICROS)
//!   and TIMESTAMP(MILLIS) (whatever their isAdjustedToUTC) and INT96 (Julian day + nanos of day, nanos
//!   truncated to micros) as micros; a DATE read as TIMESTAMP_NTZ at UTC midnight. Calendar rebasing follows
//!   Spark's `DataSourceUtils.datetimeRebaseSpec` / `int96RebaseSpec`: a file's own metadata (the Spark version
//!   that wrote it, its legacy flags) decides, else the mode the task carries. CORRECTED reads values as they
//!   are; EXCEPTION raises Spark's READ_ANCIENT_DATETIME for a value before the switch; LEGACY rebases dates
//!   from the hybrid Julian calendar (Spark's switch table) and timestamps by Spark's per-zone rebase tables
//!   (handed over by the JVM, [`register_julian_rebase`]) in the zone the file names, else the executor JVM's
//!   default zone. Where Spark computes the rebase with `java.util.Calendar` instead (a timestamp before year
//!   1, a zone without a table) those values go to Spark's own `RebaseDateTime` on the JVM, one call per
//!   batch ([`register_calendar_rebase`]); without it (the engine's tests) the read fails, naming the key that
//!   leaves the scan to Spark. TIMESTAMP_NTZ is never rebased.
//! - **Filters.** Spark keeps every data filter of a file scan in a filter above it, so the reader only ever
//!   saves work, and an answer never depends on it. Simple conjuncts of the data filters (`column <op>
//!   literal`, IN, IS [NOT] NULL) skip row groups whose statistics prove that no row passes, then pages whose
//!   page-index statistics prove it, and (when the task asks) filter rows inside the reader: each conjunct's
//!   column is decoded first and the other columns only for the rows that pass (arrow-rs's `RowFilter`).
//!   Statistics are used only where they bound the values read exactly (signed integers, strings by their
//!   byte order, dates read as written), never floats, decimals, timestamps or INT96; rows are compared as
//!   Spark compares them (integers, dates, decimals, strings by bytes; NULL passes nothing but IS NULL).
//!   Pages and rows are skipped only in row groups where no value could raise a rebase error, so skipping
//!   never hides one. The row filter costs a second decode of its columns, so it pauses after a row
//!   group where it did not pay (`ROW_FILTER_PAUSE`).
//!
//! Which scans come here (flat schemas, no partition columns, local files, rebase modes the reader keeps) is
//! decided on the JVM side; everything else stays Spark's scan.

use std::collections::VecDeque;
use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};

use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, BooleanArray, Date32Array, PrimitiveArray, RecordBatch,
    RecordBatchOptions, RecordBatchReader,
};
use arrow::buffer::{BooleanBuffer, ScalarBuffer};
use arrow::compute::{cast_with_options, CastOptions};
use arrow::datatypes::{
    DataType, Date32Type, Field, Schema, SchemaRef, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
};
use arrow::error::ArrowError;
use parquet::arrow::arrow_reader::{
    ArrowPredicate, ArrowPredicateFn, ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder, RowFilter, RowSelection, RowSelector,
};
use parquet::arrow::ProjectionMask;
use parquet::basic::Type as PhysicalType;
use parquet::file::metadata::{KeyValue, PageIndexPolicy, RowGroupMetaData};
use parquet::file::page_index::column_index::ColumnIndexMetaData;

use datafusion_common::ScalarValue;

use crate::error::SparkError;

/// One byte range of one file, as Spark's `PartitionedFile`.
#[derive(Debug, Clone, PartialEq)]
pub struct ParquetSplit {
    pub path: String,
    pub start: i64,
    pub length: i64,
    /// The file as Spark names it in its errors (`PartitionedFile.urlEncodedPath`); empty: `path`.
    pub display_path: String,
    /// The file's partition values: the schema's columns after the data columns, constant for the split.
    pub partition_values: Vec<ScalarValue>,
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

/// How a [`ScanFilter`] compares its column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterOp {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
    IsNull,
    IsNotNull,
    In,
}

/// `column <op> values`, a conjunct of Spark's data filters: a row group whose statistics prove it false or
/// NULL for every row is skipped (Spark still applies the filter above the scan).
#[derive(Debug, Clone, PartialEq)]
pub struct ScanFilter {
    /// Index of the data column (in the scan's requested names).
    pub column: usize,
    pub op: FilterOp,
    pub values: Vec<ScalarValue>,
}

/// Conjuncts that arrive while the scan runs: a hash join in the same task publishes what its build side proved
/// about the keys (`SpillingHashJoinExec::with_probe_scans`), and the reader prunes with them from its next row
/// group on. Rows read before then are not filtered again; the join above drops them anyway.
#[derive(Debug, Default)]
pub struct DynamicScanFilters {
    version: AtomicU64,
    filters: std::sync::Mutex<Vec<ScanFilter>>,
    /// Whether a join will publish here (the reader then loads page indexes).
    subscribed: std::sync::atomic::AtomicBool,
}

impl DynamicScanFilters {
    /// Marks that a join will publish conjuncts here.
    pub fn subscribe(&self) {
        self.subscribed.store(true, Ordering::Release);
    }

    fn subscribed(&self) -> bool {
        self.subscribed.load(Ordering::Acquire)
    }

    /// Adds conjuncts (every publisher's hold together).
    pub fn publish(&self, filters: Vec<ScanFilter>) {
        if filters.is_empty() {
            return;
        }
        self.filters.lock().unwrap_or_else(|e| e.into_inner()).extend(filters);
        self.version.fetch_add(1, Ordering::Release);
    }

    fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    fn filters(&self) -> Vec<ScanFilter> {
        self.filters.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// What the filters saved, reported as the reader goes: row groups skipped by their statistics, pages skipped
/// by the page index, and rows of the row groups read that the reader did not return (in skipped pages, or
/// ruled out by the row filter).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanPruning {
    pub row_groups: u64,
    pub pages: u64,
    pub rows: u64,
    /// Bytes the reader took from the file (footer, page index, pages) since the last report.
    pub bytes_read: u64,
    /// Rows the reader returned since the last report.
    pub rows_read: u64,
}

/// A Parquet file that counts the bytes the reader takes from it (Spark's input bytes of a task: the native
/// reader bypasses the Hadoop file system whose statistics Spark reads).
struct CountingFile {
    file: File,
    read: Arc<AtomicU64>,
}

impl CountingFile {
    fn try_clone(&self) -> std::io::Result<Self> {
        Ok(Self { file: self.file.try_clone()?, read: Arc::clone(&self.read) })
    }
}

impl parquet::file::reader::Length for CountingFile {
    fn len(&self) -> u64 {
        self.file.len()
    }
}

impl parquet::file::reader::ChunkReader for CountingFile {
    type T = CountingRead<<File as parquet::file::reader::ChunkReader>::T>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(CountingRead { inner: self.file.get_read(start)?, read: Arc::clone(&self.read) })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        let bytes = self.file.get_bytes(start, length)?;
        self.read.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(bytes)
    }
}

struct CountingRead<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: std::io::Read> std::io::Read for CountingRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Hears each [`ScanPruning`] as it happens.
pub type PrunedCallback = Box<dyn FnMut(ScanPruning) -> datafusion_common::Result<()> + Send>;

/// A row filter that does not pay — it keeps more than half of a row group's rows, or the rows it passes lie
/// in runs too short to skip decoding (arrow-rs then decodes every row and drops some) — is left out for this
/// many row groups.
const ROW_FILTER_PAUSE: usize = 16;
/// The mean run of passing rows below which arrow-rs decodes whole batches rather than skipping rows
/// (`RowSelectionPolicy::Auto`'s threshold).
const ROW_FILTER_MIN_RUN: u64 = 32;
/// IN lists longer than this do not filter rows (the statistics still use them).
const ROW_FILTER_MAX_IN: usize = 64;

/// Spark's `LegacyBehaviorPolicy` for dates and timestamps that may have been written in the hybrid Julian
/// calendar (Spark 2.x, or Spark 3 in LEGACY write mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RebaseMode {
    Exception,
    Corrected,
    Legacy,
}

/// How a task reads dates and timestamps: the modes for files that do not say how they were written, and
/// Spark's switch points (`RebaseDateTime.lastSwitchJulianDay` / `lastSwitchJulianTs`, sent by the JVM so
/// that they are Spark's own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatetimeRebase {
    pub datetime_mode: RebaseMode,
    pub int96_mode: RebaseMode,
    pub last_switch_julian_day: i32,
    pub last_switch_julian_ts: i64,
}

impl DatetimeRebase {
    /// Spark's defaults: EXCEPTION for both, and its switch points (1582-10-15, and the last time-zone switch).
    pub fn spark_defaults(last_switch_julian_ts: i64) -> Self {
        Self {
            datetime_mode: RebaseMode::Exception,
            int96_mode: RebaseMode::Exception,
            last_switch_julian_day: LAST_SWITCH_JULIAN_DAY,
            last_switch_julian_ts,
        }
    }
}

/// Spark's `RebaseDateTime.RebaseInfo` of one time zone, from its `julian-gregorian-rebase-micros.json` as the
/// JVM loaded it: from `switches[i]` on (micros, ascending) a hybrid-calendar timestamp is `diffs[i]` micros off
/// the proleptic Gregorian one.
#[derive(Debug, PartialEq, Eq)]
pub struct ZoneRebase {
    switches: Vec<i64>,
    diffs: Vec<i64>,
}

impl ZoneRebase {
    pub fn new(switches: Vec<i64>, diffs: Vec<i64>) -> Result<Self, String> {
        if switches.is_empty() || switches.len() != diffs.len() || !switches.is_sorted() {
            return Err(format!("a rebase table of {} switches and {} diffs", switches.len(), diffs.len()));
        }
        Ok(Self { switches, diffs })
    }

    /// Spark's `rebaseJulianToGregorianMicros(zone, micros)` below `last_switch`: the latest switch at or
    /// before `micros` gives the difference. None before the first switch (year 1), where Spark computes
    /// with `java.util.Calendar`.
    fn rebase(&self, micros: i64, last_switch: i64) -> Option<i64> {
        if micros >= last_switch {
            return Some(micros);
        }
        let i = self.switches.partition_point(|s| *s <= micros).checked_sub(1)?;
        Some(micros.wrapping_add(self.diffs[i]))
    }
}

/// Spark's rebase tables by zone id, set once per process by [`register_julian_rebase`].
static JULIAN_REBASE: std::sync::OnceLock<std::collections::HashMap<String, Arc<ZoneRebase>>> =
    std::sync::OnceLock::new();

/// Hands Spark's rebase tables to the reader (the first call wins: they are the same in every JVM of an
/// application).
pub fn register_julian_rebase(zones: std::collections::HashMap<String, Arc<ZoneRebase>>) {
    let _ = JULIAN_REBASE.set(zones);
}

/// Spark's `RebaseDateTime.rebaseJulianToGregorianMicros(zone, micros)` on the JVM, for the LEGACY timestamps the
/// tables do not cover (before year 1, or in a zone without a table), where Spark uses `java.util.Calendar`:
/// rebases `micros` in place.
pub trait CalendarRebase: Send + Sync {
    fn rebase_micros(&self, zone: &str, micros: &mut [i64]) -> Result<(), String>;
}

static CALENDAR_REBASE: std::sync::OnceLock<Box<dyn CalendarRebase>> = std::sync::OnceLock::new();

/// The process's JVM calendar (the first call wins).
pub fn register_calendar_rebase(rebase: Box<dyn CalendarRebase>) {
    let _ = CALENDAR_REBASE.set(rebase);
}

/// The zone a LEGACY timestamp rebase of one file uses, and its table when Spark has one.
#[derive(Debug, Clone, PartialEq)]
struct LegacyZone {
    name: String,
    table: Option<Arc<ZoneRebase>>,
}

impl LegacyZone {
    fn of(name: &str) -> Self {
        let table = JULIAN_REBASE.get().and_then(|zones| zones.get(name)).cloned();
        Self { name: name.to_string(), table }
    }
}

const SPARK_VERSION_KEY: &str = "org.apache.spark.version";
/// The session zone of a Spark writer in LEGACY mode: the zone its timestamps are rebased in when read.
const SPARK_TIMEZONE_KEY: &str = "org.apache.spark.timeZone";
const SPARK_LEGACY_DATETIME_KEY: &str = "org.apache.spark.legacyDateTime";
const SPARK_LEGACY_INT96_KEY: &str = "org.apache.spark.legacyINT96";

/// Spark's `DataSourceUtils.getRebaseSpec`: a file written by Spark says how (older than `min_version`, or
/// flagged by `legacy_key`: LEGACY; else CORRECTED); any other file is read in the configured mode.
fn file_rebase_mode(
    kv: Option<&Vec<KeyValue>>,
    by_config: RebaseMode,
    min_version: &str,
    legacy_key: &str,
) -> RebaseMode {
    let lookup = |key: &str| kv.and_then(|kv| kv.iter().find(|e| e.key == key)).and_then(|e| e.value.as_deref());
    match lookup(SPARK_VERSION_KEY) {
        // Java's String.compareTo, as Spark compares versions; the same as byte order for these ASCII keys.
        Some(version) if version < min_version || lookup(legacy_key).is_some() => RebaseMode::Legacy,
        Some(_) => RebaseMode::Corrected,
        None => by_config,
    }
}

/// Days since the epoch of 1582-10-15 (Julian days at or after it are the same in both calendars).
const LAST_SWITCH_JULIAN_DAY: i32 = -141427;
/// Spark's `RebaseDateTime.julianGregDiffSwitchDay` and `julianGregDiffs`: from each Julian day on, the
/// difference in days to the proleptic Gregorian date with the same fields.
const JULIAN_GREG_SWITCH_DAYS: [i32; 14] = [
    -719164,
    -682945,
    -646420,
    -609895,
    -536845,
    -500320,
    -463795,
    -390745,
    -354220,
    -317695,
    -244645,
    -208120,
    -171595,
    LAST_SWITCH_JULIAN_DAY,
];
const JULIAN_GREG_DIFFS: [i32; 14] = [2, 1, 0, -1, -2, -3, -4, -5, -6, -7, -8, -9, -10, 0];

/// Spark's `RebaseDateTime.rebaseJulianToGregorianDays`.
pub fn rebase_julian_to_gregorian_days(days: i32) -> i32 {
    let mut i = JULIAN_GREG_SWITCH_DAYS.len() - 1;
    while i > 0 && days < JULIAN_GREG_SWITCH_DAYS[i] {
        i -= 1;
    }
    days.wrapping_add(JULIAN_GREG_DIFFS[i])
}

const MICROS_PER_DAY: i64 = 86_400_000_000;

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

/// How a file column becomes the requested one.
#[derive(Debug, Clone, PartialEq)]
enum Convert {
    /// The same type.
    AsIs,
    /// A string column annotated other than UTF8 (JSON), which arrow-rs would validate by panicking: read as
    /// bytes, then checked into a string (invalid bytes fail the read).
    CheckUtf8,
    /// An exact widening (Arrow's cast).
    Cast(DataType),
    /// Days (DATE, or a plain INT32 read as DATE), rebased as the file's datetime mode says.
    Days(RebaseMode),
    /// Days read as TIMESTAMP_NTZ: rebased days at UTC midnight.
    DaysAsMicros(RebaseMode),
    /// INT64 or INT96 timestamps: values in `unit` (micros or millis), made micros, then checked or rebased
    /// per `rebase` (None: never, as TIMESTAMP_NTZ), typed as requested.
    Timestamp { unit: TimeUnit, rebase: Option<TimestampRebase>, to: DataType },
}

/// How a file's timestamps are checked or rebased: the file's mode, whether they are INT96 (their own mode
/// and error), and the zone a LEGACY rebase uses.
#[derive(Debug, Clone, PartialEq)]
struct TimestampRebase {
    mode: RebaseMode,
    int96: bool,
    zone: LegacyZone,
}

/// Where a requested column comes from in the current file.
#[derive(Debug, Clone, PartialEq)]
enum ColumnSource {
    /// Position in the projected batch, and how to convert it.
    File { index: usize, convert: Convert },
    /// Not in the file: NULLs.
    Missing,
}

/// A split being read, one row group at a time (each with its own page selection and row filter).
struct OpenSplit {
    file: CountingFile,
    meta: ArrowReaderMetadata,
    mask: ProjectionMask,
    /// Per requested column: its root in the file, how it converts, and its leaf (for statistics).
    wanted: Vec<Option<Wanted>>,
    row_groups: VecDeque<usize>,
    group: Option<GroupRead>,
    columns: Vec<ColumnSource>,
    path: String,
    partition_values: Vec<ScalarValue>,
}

#[derive(Debug, Clone)]
struct Wanted {
    root: usize,
    convert: Convert,
    leaf: Option<usize>,
}

/// One row group's reader and its counts.
struct GroupRead {
    reader: ParquetRecordBatchReader,
    rows: u64,
    /// Rows left after the page selection: what the row filter (if any) saw.
    selected: u64,
    returned: u64,
    pages: u64,
    row_filtered: bool,
    /// The rows the last predicate passed and in how many runs (of the rows the others passed: about the
    /// runs the other columns are decoded in).
    last_pass: Arc<PassRuns>,
}

/// Per predicate in evaluation order: the rows it passed and in how many runs; the last one's are kept.
#[derive(Debug, Default)]
struct PassRuns(std::sync::Mutex<(usize, u64, u64)>);

impl PassRuns {
    fn add(&self, predicate: usize, passes: &BooleanBuffer) {
        let mut counts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if counts.0 != predicate {
            *counts = (predicate, 0, 0);
        }
        counts.1 += passes.count_set_bits() as u64;
        counts.2 += passes.set_slices().count() as u64;
    }

    /// The rows passed and their runs.
    fn get(&self) -> (u64, u64) {
        let counts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        (counts.1, counts.2)
    }
}

/// The batches of a task's splits, in order, as the plan's input schema (Spark's requested schema).
pub struct ParquetScanReader<F> {
    schema: SchemaRef,
    /// The requested columns' names as Spark resolved them (the schema's own names may be positional).
    names: Vec<String>,
    case_sensitive: bool,
    rebase: DatetimeRebase,
    /// The executor JVM's default zone: a LEGACY timestamp rebase uses it for files that name none.
    default_zone: String,
    batch_size: usize,
    splits: VecDeque<ParquetSplit>,
    filters: Vec<ScanFilter>,
    /// How many of `filters` are the task's own (the rest came from `dynamic`).
    own_filters: usize,
    /// Conjuncts published while the scan runs, and the version of them taken into `filters`.
    dynamic: Option<(Arc<DynamicScanFilters>, u64)>,
    on_pruned: Option<PrunedCallback>,
    /// Whether conjuncts filter rows inside the reader (else they only skip row groups and pages).
    filter_rows: bool,
    /// Row groups still to read without the row filter, and how many a pause lasts (see [`ROW_FILTER_PAUSE`]).
    row_filter_pause: usize,
    row_filter_pause_groups: usize,
    current: Option<OpenSplit>,
    /// Bytes taken from the files and not reported yet (shared with each split's [`CountingFile`]).
    bytes_read: Arc<AtomicU64>,
    /// Set after an error: the reader ends there.
    failed: bool,
    alive: F,
}

impl<F: FnMut() -> datafusion_common::Result<()>> ParquetScanReader<F> {
    pub fn new(
        schema: SchemaRef,
        names: Vec<String>,
        case_sensitive: bool,
        rebase: DatetimeRebase,
        splits: Vec<ParquetSplit>,
        batch_size: usize,
        alive: F,
    ) -> Result<Self, ArrowError> {
        let partitions = schema.fields().len().checked_sub(names.len()).ok_or_else(|| {
            ArrowError::SchemaError(format!(
                "a Parquet scan of {} columns named {} columns",
                schema.fields().len(),
                names.len()
            ))
        })?;
        for split in &splits {
            let types_match = split.partition_values.len() == partitions
                && split
                    .partition_values
                    .iter()
                    .zip(&schema.fields()[names.len()..])
                    .all(|(v, f)| &v.data_type() == f.data_type());
            if !types_match {
                return Err(ArrowError::SchemaError(format!(
                    "split {} has partition values {:?} for partition columns {:?}",
                    split.name(),
                    split.partition_values,
                    &schema.fields()[names.len()..]
                )));
            }
        }
        Ok(Self {
            schema,
            names,
            case_sensitive,
            rebase,
            default_zone: "UTC".to_string(),
            batch_size: batch_size.max(1),
            splits: splits.into(),
            filters: Vec::new(),
            own_filters: 0,
            dynamic: None,
            on_pruned: None,
            filter_rows: true,
            row_filter_pause: 0,
            row_filter_pause_groups: ROW_FILTER_PAUSE,
            current: None,
            bytes_read: Arc::new(AtomicU64::new(0)),
            failed: false,
            alive,
        })
    }

    /// Rebases LEGACY timestamps of files that name no zone in `zone` (Spark's `RebaseSpec.timeZone`: the
    /// executor JVM's default).
    pub fn with_default_zone(mut self, zone: String) -> Self {
        self.default_zone = zone;
        self
    }

    /// Skips row groups and pages by `filters`' statistics and filters rows by them; `on_pruned` hears what
    /// was skipped.
    pub fn with_filters(mut self, filters: Vec<ScanFilter>, on_pruned: PrunedCallback) -> Self {
        self.own_filters = filters.len();
        self.filters = filters;
        self.on_pruned = Some(on_pruned);
        self
    }

    /// Also prunes with the conjuncts published to `dynamic` as they arrive (see [`DynamicScanFilters`]).
    pub fn with_dynamic_filters(mut self, dynamic: Arc<DynamicScanFilters>) -> Self {
        self.dynamic = Some((dynamic, 0));
        self
    }

    /// Takes newly published conjuncts into `filters` and prunes the remaining row groups of `open` with them.
    fn refresh_dynamic(&mut self, open: Option<&mut OpenSplit>) -> Result<(), ArrowError> {
        let Some((dynamic, seen)) = &mut self.dynamic else { return Ok(()) };
        let version = dynamic.version();
        if version == *seen {
            return Ok(());
        }
        *seen = version;
        let published = dynamic.filters();
        self.filters.truncate(self.own_filters);
        self.filters.extend(published);
        if let Some(open) = open {
            let remaining: Vec<usize> = open.row_groups.drain(..).collect();
            open.row_groups = self.prune(&open.meta, &open.wanted, remaining, &open.path)?.into();
        }
        Ok(())
    }

    /// Whether the filters also filter rows inside the reader (default true); statistics are used either way.
    pub fn with_row_filter(mut self, enabled: bool) -> Self {
        self.filter_rows = enabled;
        self
    }

    /// How many row groups are read without the row filter after one where it kept most rows (0: never
    /// paused).
    pub fn with_row_filter_pause(mut self, row_groups: usize) -> Self {
        self.row_filter_pause_groups = row_groups;
        self
    }

    fn report(&mut self, mut pruning: ScanPruning, file: &str) -> Result<(), ArrowError> {
        pruning.bytes_read += self.bytes_read.swap(0, Ordering::Relaxed);
        if pruning == ScanPruning::default() {
            return Ok(());
        }
        match self.on_pruned.as_mut() {
            Some(report) => report(pruning).map_err(|e| failed_read(file, e)),
            None => Ok(()),
        }
    }

    /// Opens the next split that has row groups of its own; None when none is left.
    fn open_next(&mut self) -> Result<Option<OpenSplit>, ArrowError> {
        while let Some(split) = self.splits.pop_front() {
            let file_name = split.name().to_string();
            let context = |e: &dyn std::fmt::Display| failed_read(&file_name, e);
            let file = File::open(&split.path).map_err(|e| context(&e))?;
            let file = CountingFile { file, read: Arc::clone(&self.bytes_read) };
            // Spark writes no Arrow schema into its files; one written by another tool is ignored too, so a
            // column reads as its Parquet type says (strings as Utf8, not whichever view type a writer chose).
            let mut options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
            if !self.filters.is_empty() || self.dynamic.as_ref().is_some_and(|(d, _)| d.subscribed()) {
                options = options.with_page_index_policy(PageIndexPolicy::Optional);
            }
            let meta = ArrowReaderMetadata::load(&file, options.clone()).map_err(|e| context(&e))?;
            let roots_physical: Vec<Option<PhysicalType>> = meta
                .parquet_schema()
                .root_schema()
                .get_fields()
                .iter()
                .map(|t| t.is_primitive().then(|| t.get_physical_type()))
                .collect();
            let meta = int96_as_micros(meta, &options).map_err(|e| context(&e))?;
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
            let kv = meta.metadata().file_metadata().key_value_metadata();
            let datetime_mode = file_rebase_mode(kv, self.rebase.datetime_mode, "3.0.0", SPARK_LEGACY_DATETIME_KEY);
            let int96_mode = file_rebase_mode(kv, self.rebase.int96_mode, "3.1.0", SPARK_LEGACY_INT96_KEY);
            let zone = LegacyZone::of(
                kv.and_then(|kv| kv.iter().find(|e| e.key == SPARK_TIMEZONE_KEY))
                    .and_then(|e| e.value.as_deref())
                    .unwrap_or(&self.default_zone),
            );
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
                        let int96 = roots_physical[*i] == Some(PhysicalType::INT96);
                        let convert = if let Some(c) =
                            temporal(found, int96, field.data_type(), datetime_mode, int96_mode, &zone)
                        {
                            c
                        } else if found == field.data_type() {
                            let root = &meta.parquet_schema().root_schema().get_fields()[*i];
                            let utf8 = root.is_primitive()
                                && root.get_basic_info().converted_type() == parquet::basic::ConvertedType::UTF8;
                            if found == &DataType::Utf8 && !utf8 {
                                Convert::CheckUtf8
                            } else {
                                Convert::AsIs
                            }
                        } else if exact_widening(found, field.data_type()) {
                            Convert::Cast(field.data_type().clone())
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
                        wanted.push(Some((*i, convert)));
                    }
                    many => {
                        let found: Vec<&str> = many.iter().map(|i| file_schema.field(*i).name().as_str()).collect();
                        let duplicate = SparkError::duplicate_field_in_case_insensitive_mode(
                            name,
                            &format!("[{}]", found.join(", ")),
                        );
                        return Err(ArrowError::ExternalError(Box::new(SparkError::failed_read_file_with(
                            &file_name, duplicate,
                        ))));
                    }
                }
            }
            // Strings requested as bytes (a plan carrying Spark's strings as `Binary`): their columns read as
            // unannotated BYTE_ARRAY, so the reader neither validates UTF-8 nor fails on Spark's invalid bytes.
            let as_bytes: Vec<usize> = wanted
                .iter()
                .flatten()
                .filter(|(i, c)| {
                    matches!(c, Convert::Cast(DataType::Binary) | Convert::CheckUtf8)
                        && file_schema.field(*i).data_type() == &DataType::Utf8
                        && roots_physical[*i] == Some(PhysicalType::BYTE_ARRAY)
                })
                .map(|(i, _)| *i)
                .collect();
            let meta = if as_bytes.is_empty() {
                meta
            } else {
                for w in wanted.iter_mut().flatten() {
                    if as_bytes.contains(&w.0) && matches!(w.1, Convert::Cast(_)) {
                        w.1 = Convert::AsIs;
                    }
                }
                strings_as_bytes(&meta, &as_bytes, &options).map_err(|e| context(&e))?
            };
            let leaves = meta.parquet_schema().columns();
            let wanted: Vec<Option<Wanted>> = wanted
                .into_iter()
                .map(|w| {
                    w.map(|(root, convert)| {
                        let field = &meta.parquet_schema().root_schema().get_fields()[root];
                        let leaf = field
                            .is_primitive()
                            .then(|| {
                                leaves
                                    .iter()
                                    .position(|c| c.path().parts().len() == 1 && c.path().parts()[0] == field.name())
                            })
                            .flatten();
                        Wanted { root, convert, leaf }
                    })
                })
                .collect();
            let row_groups = self.prune(&meta, &wanted, row_groups, &file_name)?;
            if row_groups.is_empty() {
                continue;
            }
            roots.sort_unstable();
            roots.dedup();
            // The projected batch holds the chosen roots in file order.
            let columns = wanted
                .iter()
                .map(|w| match w {
                    None => ColumnSource::Missing,
                    Some(w) => ColumnSource::File {
                        index: roots.binary_search(&w.root).expect("chosen root"),
                        convert: w.convert.clone(),
                    },
                })
                .collect();
            let mask = ProjectionMask::roots(meta.parquet_schema(), roots);
            return Ok(Some(OpenSplit {
                file,
                meta,
                mask,
                wanted,
                row_groups: row_groups.into(),
                group: None,
                columns,
                path: file_name,
                partition_values: split.partition_values,
            }));
        }
        Ok(None)
    }

    /// The row groups of `row_groups` that `filters` cannot rule out by their statistics.
    fn prune(
        &mut self,
        meta: &ArrowReaderMetadata,
        wanted: &[Option<Wanted>],
        row_groups: Vec<usize>,
        file: &str,
    ) -> Result<Vec<usize>, ArrowError> {
        if self.filters.is_empty() {
            return Ok(row_groups);
        }
        let before = row_groups.len();
        let kept: Vec<usize> = row_groups
            .into_iter()
            .filter(|&rg| {
                let quiet = self.quiet(meta, wanted, rg);
                let rg = meta.metadata().row_group(rg);
                !self.filters.iter().any(|f| {
                    self.exact_leaf(meta, wanted, f.column, quiet)
                        .and_then(|l| rg.column(l).statistics())
                        .and_then(|st| Bounds::of_statistics(st, rg.num_rows()))
                        .is_some_and(|b| rules_out(f, &b))
                })
            })
            .collect();
        let row_groups = (before - kept.len()) as u64;
        self.report(ScanPruning { row_groups, ..Default::default() }, file)?;
        Ok(kept)
    }

    /// The leaf of requested column `column` if its statistics bound the values read exactly; `as_written`:
    /// the row group's dates read as written whatever the rebase mode (see [`Self::quiet`]).
    fn exact_leaf(
        &self,
        meta: &ArrowReaderMetadata,
        wanted: &[Option<Wanted>],
        column: usize,
        as_written: bool,
    ) -> Option<usize> {
        let w = wanted.get(column)?.as_ref()?;
        let root = &meta.parquet_schema().root_schema().get_fields()[w.root];
        stats_exact(root, &w.convert, as_written).then_some(w.leaf).flatten()
    }

    /// Whether row group `rg` reads every value as written: no date or timestamp in it is before the calendar
    /// switch where its rebase mode would fail the read (EXCEPTION) or change the value (LEGACY), as its
    /// statistics prove. Only then may pages and rows be skipped, since skipping must never hide a rebase
    /// error that reading them would raise.
    fn quiet(&self, meta: &ArrowReaderMetadata, wanted: &[Option<Wanted>], rg: usize) -> bool {
        use parquet::file::statistics::Statistics as S;
        let rg = meta.metadata().row_group(rg);
        wanted.iter().flatten().all(|w| {
            let min = || w.leaf.and_then(|l| rg.column(l).statistics());
            match &w.convert {
                Convert::Days(m) | Convert::DaysAsMicros(m) if *m != RebaseMode::Corrected => match min() {
                    Some(S::Int32(s)) => s.min_opt().is_some_and(|d| *d >= self.rebase.last_switch_julian_day),
                    _ => false,
                },
                Convert::Timestamp { rebase: Some(r), unit, .. } if r.mode != RebaseMode::Corrected => {
                    let per_unit = if *unit == TimeUnit::Millisecond { 1000 } else { 1 };
                    match min() {
                        Some(S::Int64(s)) if !r.int96 => s
                            .min_opt()
                            .and_then(|v| v.checked_mul(per_unit))
                            .is_some_and(|v| v >= self.rebase.last_switch_julian_ts),
                        _ => false,
                    }
                }
                _ => true,
            }
        })
    }

    /// The rows of row group `rg` on pages that the page index does not rule out, with the number of pages
    /// ruled out; None when no page is.
    fn page_selection(&self, open: &OpenSplit, rg: usize) -> Option<(RowSelection, u64)> {
        let metadata = open.meta.metadata();
        let (indexes, offsets) = (metadata.column_index()?.get(rg)?, metadata.offset_index()?.get(rg)?);
        let rows = metadata.row_group(rg).num_rows();
        let mut selection: Option<RowSelection> = None;
        let mut pages = 0u64;
        // The filters on columns whose statistics are exact, grouped by the leaf they test.
        let mut by_leaf: Vec<(usize, &ScanFilter)> = self
            .filters
            .iter()
            .filter_map(|f| Some((self.exact_leaf(&open.meta, &open.wanted, f.column, true)?, f)))
            .collect();
        by_leaf.sort_by_key(|(leaf, _)| *leaf);
        for group in by_leaf.chunk_by(|a, b| a.0 == b.0) {
            let leaf = group[0].0;
            let (Some(index), Some(offsets)) = (indexes.get(leaf), offsets.get(leaf)) else { continue };
            if !index_ordered(metadata, leaf, index) {
                continue;
            }
            let locations = offsets.page_locations();
            if index.num_pages() as usize != locations.len() {
                continue;
            }
            let mut selectors = Vec::with_capacity(locations.len());
            let mut ruled_out = 0u64;
            for (p, location) in locations.iter().enumerate() {
                let end = locations.get(p + 1).map_or(rows, |l| l.first_row_index);
                let len = usize::try_from(end - location.first_row_index).ok()?;
                let bounds = Bounds::of_page(index, p, len as i64);
                if bounds.is_some_and(|b| group.iter().any(|(_, f)| rules_out(f, &b))) {
                    ruled_out += 1;
                    selectors.push(RowSelector::skip(len));
                } else {
                    selectors.push(RowSelector::select(len));
                }
            }
            if ruled_out > 0 {
                pages += ruled_out;
                let s = RowSelection::from(selectors);
                selection = Some(match selection {
                    None => s,
                    Some(prev) => prev.intersection(&s),
                });
            }
        }
        selection.map(|s| (s, pages))
    }

    /// One predicate per filtered column (the conjuncts on it ANDed), cheap types first, for row group `rg`.
    fn predicates(&self, open: &OpenSplit, rg: usize, last_pass: &Arc<PassRuns>) -> Vec<Box<dyn ArrowPredicate>> {
        use parquet::file::statistics::Statistics;
        let mut columns: Vec<usize> = self.filters.iter().map(|f| f.column).collect();
        let mut seen = std::collections::HashSet::new();
        columns.retain(|c| seen.insert(*c));
        let target = |c: usize| self.schema.field(c).data_type().clone();
        let cost = |dt: &DataType| match dt {
            DataType::Utf8 | DataType::Binary => 2,
            DataType::Decimal128(..) => 1,
            _ => 0,
        };
        columns.sort_by_key(|c| cost(&target(*c)));
        let rg_meta = open.meta.metadata().row_group(rg);
        let mut predicates: Vec<Box<dyn ArrowPredicate>> = Vec::new();
        for column in columns {
            let Some(w) = open.wanted.get(column).and_then(|w| w.as_ref()) else { continue };
            let to = target(column);
            let filterable = matches!(
                to,
                DataType::Int8
                    | DataType::Int16
                    | DataType::Int32
                    | DataType::Int64
                    | DataType::Date32
                    | DataType::Utf8
                    | DataType::Binary
                    | DataType::Decimal128(..)
            );
            let converts = match &w.convert {
                Convert::AsIs | Convert::Days(_) => true,
                Convert::Cast(_) => !matches!(to, DataType::Utf8),
                _ => false,
            };
            if !filterable || !converts {
                continue;
            }
            let no_nulls = w
                .leaf
                .and_then(|l| rg_meta.column(l).statistics())
                .and_then(Statistics::null_count_opt)
                .is_some_and(|n| n == 0);
            let conjuncts: Vec<ScanFilter> = self
                .filters
                .iter()
                .filter(|f| f.column == column)
                .filter(|f| f.values.iter().all(|v| v.data_type() == to))
                .filter(|f| !(f.op == FilterOp::IsNotNull && no_nulls))
                .filter(|f| f.op != FilterOp::In || f.values.len() <= ROW_FILTER_MAX_IN)
                .cloned()
                .collect();
            if conjuncts.is_empty() {
                continue;
            }
            let (convert, rebase, path, name) =
                (w.convert.clone(), self.rebase, open.path.clone(), self.schema.field(column).name().clone());
            let mask = ProjectionMask::roots(open.meta.parquet_schema(), [w.root]);
            let (runs, predicate) = (last_pass.clone(), predicates.len());
            predicates.push(Box::new(ArrowPredicateFn::new(mask, move |batch: RecordBatch| {
                let column = match &convert {
                    Convert::Cast(to) => {
                        cast_with_options(batch.column(0), to, &CastOptions { safe: false, ..Default::default() })?
                    }
                    other => convert_temporal(batch.column(0), other, &rebase, &path, &name)?,
                };
                let mut passes = BooleanBuffer::new_set(column.len());
                for f in &conjuncts {
                    passes = &passes & &conjunct_passes(f, &column)?;
                }
                runs.add(predicate, &passes);
                Ok(BooleanArray::new(passes, None))
            })));
        }
        predicates
    }

    /// Whether row group `rg` needs a reader of its own: its pages are skipped, or rows may be filtered.
    fn own_reader(&self, open: &OpenSplit, rg: usize) -> bool {
        !self.filters.is_empty()
            && self.quiet(&open.meta, &open.wanted, rg)
            && (self.filter_rows || self.page_selection(open, rg).is_some())
    }

    /// The reader of row group `rg` of `open`, with the pages and rows its filters skip; None when its pages
    /// rule out every row. The following row groups that need nothing of their own are read by the same reader.
    fn open_group(&mut self, open: &mut OpenSplit, rg: usize) -> Result<Option<GroupRead>, ArrowError> {
        let context = |e: &dyn std::fmt::Display| failed_read(&open.path, e);
        let rows_of = |rg: usize| open.meta.metadata().row_group(rg).num_rows().max(0) as u64;
        let first_rows = rows_of(rg);
        let (mut selected, mut pages, mut row_filtered) = (first_rows, 0, false);
        let (mut selection, mut filter) = (None, None);
        let last_pass = Arc::new(PassRuns::default());
        if !self.filters.is_empty() && self.quiet(&open.meta, &open.wanted, rg) {
            if let Some((s, ruled_out)) = self.page_selection(open, rg) {
                selected = s.row_count() as u64;
                pages = ruled_out;
                selection = Some(s);
            }
            if selected == 0 {
                self.report(ScanPruning { pages, rows: first_rows, ..Default::default() }, &open.path)?;
                return Ok(None);
            }
            if self.filter_rows {
                if self.row_filter_pause > 0 {
                    self.row_filter_pause -= 1;
                } else {
                    let predicates = self.predicates(open, rg, &last_pass);
                    if !predicates.is_empty() {
                        filter = Some(RowFilter::new(predicates));
                        row_filtered = true;
                    }
                }
            }
        }
        let (mut groups, mut rows) = (vec![rg], first_rows);
        if selection.is_none() && filter.is_none() && !self.filter_rows {
            while let Some(&next) = open.row_groups.front() {
                if self.own_reader(open, next) {
                    break;
                }
                open.row_groups.pop_front();
                groups.push(next);
                rows += rows_of(next);
                selected += rows_of(next);
            }
        }
        let file = open.file.try_clone().map_err(|e| context(&e))?;
        let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, open.meta.clone())
            .with_projection(open.mask.clone())
            .with_row_groups(groups)
            .with_batch_size(self.batch_size);
        if let Some(s) = selection {
            builder = builder.with_row_selection(s);
        }
        if let Some(f) = filter {
            builder = builder.with_row_filter(f);
        }
        // The row filter is evaluated here, over the whole row group.
        let reader = builder.build().map_err(|e| context(&e))?;
        Ok(Some(GroupRead { reader, rows, selected, returned: 0, pages, row_filtered, last_pass }))
    }

    /// Reports what a finished row group's filters skipped and pauses a row filter that kept most rows.
    fn finish_group(&mut self, group: &GroupRead, file: &str) -> Result<(), ArrowError> {
        let (passed, runs) = group.last_pass.get();
        let short_runs = runs > 0 && passed < runs * ROW_FILTER_MIN_RUN;
        if group.row_filtered && (group.returned * 2 > group.selected || short_runs) {
            self.row_filter_pause = self.row_filter_pause_groups;
        }
        let rows = group.rows.saturating_sub(group.returned);
        self.report(ScanPruning { pages: group.pages, rows, rows_read: group.returned, ..Default::default() }, file)
    }

    fn next_batch(&mut self) -> Option<Result<RecordBatch, ArrowError>> {
        loop {
            if let Err(e) = (self.alive)() {
                return Some(Err(ArrowError::ExternalError(Box::new(e))));
            }
            // Between row groups: the conjuncts published since the last one.
            if self.current.as_ref().is_none_or(|o| o.group.is_none()) {
                let mut current = self.current.take();
                let refreshed = self.refresh_dynamic(current.as_mut());
                self.current = current;
                if let Err(e) = refreshed {
                    return Some(Err(e));
                }
            }
            let mut open = match self.current.take() {
                Some(open) => open,
                None => match self.open_next() {
                    Ok(Some(open)) => open,
                    // The last splits' bytes (e.g. footers of splits without row groups of their own).
                    Ok(None) => return self.report(ScanPruning::default(), "").err().map(Err),
                    Err(e) => return Some(Err(e)),
                },
            };
            if open.group.is_none() {
                let Some(rg) = open.row_groups.pop_front() else { continue };
                match self.open_group(&mut open, rg) {
                    Ok(Some(group)) => open.group = Some(group),
                    Ok(None) => {
                        self.current = Some(open);
                        continue;
                    }
                    Err(e) => return Some(Err(e)),
                }
            }
            let group = open.group.as_mut().expect("an open row group");
            match group.reader.next() {
                Some(Ok(batch)) => {
                    group.returned += batch.num_rows() as u64;
                    let converted = self.convert(&open, batch);
                    self.current = Some(open);
                    return Some(converted);
                }
                Some(Err(e)) => return Some(Err(failed_read(&open.path, e))),
                None => {
                    let group = open.group.take().expect("an open row group");
                    if let Err(e) = self.finish_group(&group, &open.path) {
                        return Some(Err(e));
                    }
                    self.current = Some(open);
                }
            }
        }
    }

    fn convert(&self, open: &OpenSplit, batch: RecordBatch) -> Result<RecordBatch, ArrowError> {
        let rows = batch.num_rows();
        let mut columns = open
            .columns
            .iter()
            .zip(self.schema.fields())
            .map(|(source, field)| match source {
                ColumnSource::Missing => Ok(new_null_array(field.data_type(), rows)),
                ColumnSource::File { index, convert: Convert::AsIs } => Ok(batch.column(*index).clone()),
                ColumnSource::File { index, convert: Convert::CheckUtf8 } => {
                    let column = batch.column(*index).clone();
                    crate::unsafe_row::conform_string_column(column, field.data_type(), field.name(), false)
                        .map_err(|e| failed_read(&open.path, e))
                }
                // Not `safe`: a value the conversion cannot make (invalid UTF-8 in BINARY read as STRING) is an
                // error, never a NULL in its place.
                ColumnSource::File { index, convert: Convert::Cast(to) } => {
                    cast_with_options(batch.column(*index), to, &CastOptions { safe: false, ..Default::default() })
                        .map_err(|e| failed_read(&open.path, format!("column {}: {e}", field.name())))
                }
                ColumnSource::File { index, convert } => {
                    convert_temporal(batch.column(*index), convert, &self.rebase, &open.path, field.name())
                }
            })
            .collect::<Result<Vec<ArrayRef>, _>>()?;
        for value in &open.partition_values {
            columns.push(value.to_array_of_size(rows).map_err(|e| failed_read(&open.path, e))?);
        }
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )
    }
}

/// Whether a file column's statistics bound the values the scan reads from it: signed integers (read as is
/// or widened), DATE read as written (CORRECTED, or `as_written`: a row group with no date before the switch),
/// strings in byte order. Never floats (NaN, -0.0), decimals, timestamps, INT96, unsigned integers, or rebased
/// dates.
fn stats_exact(column: &parquet::schema::types::Type, convert: &Convert, as_written: bool) -> bool {
    use parquet::basic::{ConvertedType, LogicalType};
    let info = column.get_basic_info();
    let unsigned = matches!(info.logical_type_ref(), Some(LogicalType::Integer(int)) if !int.is_signed)
        || matches!(
            info.converted_type(),
            ConvertedType::UINT_8 | ConvertedType::UINT_16 | ConvertedType::UINT_32 | ConvertedType::UINT_64
        );
    match (column.get_physical_type(), convert) {
        (PhysicalType::INT32 | PhysicalType::INT64, Convert::AsIs | Convert::Cast(_)) => !unsigned,
        (PhysicalType::INT32, Convert::Days(RebaseMode::Corrected)) => true,
        (PhysicalType::INT32, Convert::Days(_)) => as_written,
        (PhysicalType::BYTE_ARRAY, Convert::AsIs | Convert::CheckUtf8) => true,
        _ => false,
    }
}

/// A bound of a column's values in statistics: an integer (INT32 / INT64) or bytes (BYTE_ARRAY).
#[derive(Debug, Clone, Copy)]
enum Bound<'a> {
    Int(i64),
    Bytes(&'a [u8]),
}

/// What statistics say of `rows` values (a row group's, or a page's from the page index): lower and upper
/// bounds of the non-NULL values, and how many are NULL.
#[derive(Debug, Clone, Copy)]
struct Bounds<'a> {
    min: Option<Bound<'a>>,
    max: Option<Bound<'a>>,
    nulls: Option<u64>,
    rows: i64,
}

impl<'a> Bounds<'a> {
    fn of_statistics(st: &'a parquet::file::statistics::Statistics, rows: i64) -> Option<Self> {
        use parquet::file::statistics::Statistics as S;
        let (min, max) = match st {
            S::Int32(s) => (s.min_opt().map(|v| Bound::Int(*v as i64)), s.max_opt().map(|v| Bound::Int(*v as i64))),
            S::Int64(s) => (s.min_opt().map(|v| Bound::Int(*v)), s.max_opt().map(|v| Bound::Int(*v))),
            S::ByteArray(s) if !st.is_min_max_deprecated() => {
                (s.min_opt().map(|v| Bound::Bytes(v.data())), s.max_opt().map(|v| Bound::Bytes(v.data())))
            }
            _ => (None, None),
        };
        Some(Self { min, max, nulls: st.null_count_opt(), rows })
    }

    /// Page `page` of a column index, holding `rows` rows; None for a type whose bounds are not used.
    fn of_page(index: &'a ColumnIndexMetaData, page: usize, rows: i64) -> Option<Self> {
        let nulls = index.null_count(page).and_then(|n| u64::try_from(n).ok());
        let (min, max) = match index {
            ColumnIndexMetaData::INT32(i) => {
                (i.min_value(page).map(|v| Bound::Int(*v as i64)), i.max_value(page).map(|v| Bound::Int(*v as i64)))
            }
            ColumnIndexMetaData::INT64(i) => {
                (i.min_value(page).map(|v| Bound::Int(*v)), i.max_value(page).map(|v| Bound::Int(*v)))
            }
            ColumnIndexMetaData::BYTE_ARRAY(i) => {
                (i.min_value(page).map(Bound::Bytes), i.max_value(page).map(Bound::Bytes))
            }
            _ => return None,
        };
        // A page of NULLs only has no bounds and may not say how many NULLs it holds.
        let nulls = if index.is_null_page(page) { Some(rows.max(0) as u64) } else { nulls };
        Some(Self { min, max, nulls, rows })
    }
}

/// Whether a column index orders its values as the scan compares them: integers signed, byte arrays by
/// unsigned bytes (the type-defined order; a file from a writer that predates column orders is not trusted).
fn index_ordered(
    metadata: &parquet::file::metadata::ParquetMetaData,
    leaf: usize,
    index: &ColumnIndexMetaData,
) -> bool {
    use parquet::basic::{ColumnOrder, SortOrder};
    match index {
        ColumnIndexMetaData::INT32(_) | ColumnIndexMetaData::INT64(_) => true,
        ColumnIndexMetaData::BYTE_ARRAY(_) => {
            matches!(metadata.file_metadata().column_order(leaf), ColumnOrder::TYPE_DEFINED_ORDER(SortOrder::UNSIGNED))
        }
        _ => false,
    }
}

/// Whether statistics `b` prove `f` false or NULL for every row they cover.
fn rules_out(f: &ScanFilter, b: &Bounds) -> bool {
    use std::cmp::Ordering;
    let all_null = b.nulls.is_some_and(|n| i64::try_from(n).is_ok_and(|n| n == b.rows));
    match f.op {
        FilterOp::IsNull => return b.nulls == Some(0),
        FilterOp::IsNotNull => return all_null,
        _ => {}
    }
    // A comparison is NULL on NULL rows: a row group of NULLs passes none.
    if all_null && b.rows > 0 {
        return true;
    }
    // The literal's place relative to [min, max], as (literal vs min, literal vs max).
    let place = |v: &ScalarValue| -> Option<(Ordering, Ordering)> {
        match (b.min?, b.max?) {
            (Bound::Int(min), Bound::Int(max)) => {
                let v = match v {
                    ScalarValue::Int8(Some(x)) => *x as i64,
                    ScalarValue::Int16(Some(x)) => *x as i64,
                    ScalarValue::Int32(Some(x)) => *x as i64,
                    ScalarValue::Int64(Some(x)) => *x,
                    ScalarValue::Date32(Some(x)) => *x as i64,
                    _ => return None,
                };
                Some((v.cmp(&min), v.cmp(&max)))
            }
            (Bound::Bytes(min), Bound::Bytes(max)) => {
                let v = match v {
                    ScalarValue::Utf8(Some(v)) => v.as_bytes(),
                    // A string of a plan carrying strings as bytes.
                    ScalarValue::Binary(Some(v)) => v.as_slice(),
                    _ => return None,
                };
                Some((v.cmp(min), v.cmp(max)))
            }
            _ => None,
        }
    };
    let outside = |v: &ScalarValue| place(v).is_some_and(|(lo, hi)| lo == Ordering::Less || hi == Ordering::Greater);
    match (f.op, f.values.as_slice()) {
        (FilterOp::In, values) => {
            // NULLs in the list match nothing; every other value must be provably absent.
            !values.is_empty()
                && values.iter().all(|v| v.is_null() || outside(v))
                && values.iter().any(|v| !v.is_null())
        }
        (_, [v]) if !v.is_null() => match (f.op, place(v)) {
            (FilterOp::Eq, Some((lo, hi))) => lo == Ordering::Less || hi == Ordering::Greater,
            // column < v: no row when min >= v.
            (FilterOp::Lt, Some((lo, _))) => lo != Ordering::Greater,
            (FilterOp::Le, Some((lo, _))) => lo == Ordering::Less,
            (FilterOp::Gt, Some((_, hi))) => hi != Ordering::Less,
            (FilterOp::Ge, Some((_, hi))) => hi == Ordering::Greater,
            _ => false,
        },
        _ => false,
    }
}

/// The rows of `column` (converted to the requested type, that of `f`'s literals) for which `f` is true, as
/// Spark evaluates it: a comparison with NULL, or of a NULL, is not true; an IN list matches its non-NULL
/// values.
fn conjunct_passes(f: &ScanFilter, column: &ArrayRef) -> Result<BooleanBuffer, ArrowError> {
    use arrow::compute::kernels::cmp;
    let scalar = |v: &ScalarValue| v.to_scalar().map_err(|e| ArrowError::ComputeError(e.to_string()));
    let result: BooleanArray = match (f.op, f.values.as_slice()) {
        (FilterOp::IsNull, _) => arrow::compute::is_null(column)?,
        (FilterOp::IsNotNull, _) => arrow::compute::is_not_null(column)?,
        (FilterOp::In, values) => {
            let mut any = BooleanArray::new(BooleanBuffer::new_unset(column.len()), None);
            for v in values.iter().filter(|v| !v.is_null()) {
                any = arrow::compute::or(&any, &cmp::eq(column, &scalar(v)?)?)?;
            }
            any
        }
        (op, [v]) => {
            let v = scalar(v)?;
            match op {
                FilterOp::Eq => cmp::eq(column, &v)?,
                FilterOp::Lt => cmp::lt(column, &v)?,
                FilterOp::Le => cmp::lt_eq(column, &v)?,
                FilterOp::Gt => cmp::gt(column, &v)?,
                _ => cmp::gt_eq(column, &v)?,
            }
        }
        // A comparison without its one literal filters nothing.
        _ => return Ok(BooleanBuffer::new_set(column.len())),
    };
    Ok(match result.nulls() {
        Some(valid) => result.values() & valid.inner(),
        None => result.values().clone(),
    })
}

/// The conversion of a file column to a requested date or timestamp, as Spark's
/// `ParquetVectorUpdaterFactory` chooses it; None: not a temporal read (the other rules decide, and a
/// mismatch fails as Spark's does).
fn temporal(
    found: &DataType,
    int96: bool,
    requested: &DataType,
    datetime_mode: RebaseMode,
    int96_mode: RebaseMode,
    zone: &LegacyZone,
) -> Option<Convert> {
    let rebase = |mode, int96| TimestampRebase { mode, int96, zone: zone.clone() };
    use DataType::*;
    match (found, requested) {
        (Date32 | Int32, Date32) => Some(Convert::Days(datetime_mode)),
        (Date32, Timestamp(TimeUnit::Microsecond, None)) => Some(Convert::DaysAsMicros(datetime_mode)),
        // INT96 (hinted to micros): its own mode for TIMESTAMP; TIMESTAMP_NTZ has no legacy files.
        (Timestamp(TimeUnit::Microsecond, _), Timestamp(TimeUnit::Microsecond, tz)) if int96 => {
            Some(Convert::Timestamp {
                unit: TimeUnit::Microsecond,
                rebase: tz.is_some().then(|| rebase(int96_mode, true)),
                to: requested.clone(),
            })
        }
        (
            Timestamp(unit @ (TimeUnit::Microsecond | TimeUnit::Millisecond), _),
            Timestamp(TimeUnit::Microsecond, tz),
        ) => Some(Convert::Timestamp {
            unit: *unit,
            rebase: tz.is_some().then(|| rebase(datetime_mode, false)),
            to: requested.clone(),
        }),
        _ => None,
    }
}

/// The first valid value below `limit`, if any.
fn any_below<T: arrow::datatypes::ArrowPrimitiveType>(a: &PrimitiveArray<T>, limit: T::Native) -> bool
where
    T::Native: PartialOrd,
{
    match a.nulls() {
        None => a.values().iter().any(|v| *v < limit),
        Some(n) => a.values().iter().enumerate().any(|(i, v)| n.is_valid(i) && *v < limit),
    }
}

fn convert_temporal(
    array: &ArrayRef,
    convert: &Convert,
    rebase: &DatetimeRebase,
    path: &str,
    column: &str,
) -> Result<ArrayRef, ArrowError> {
    let ancient = |int96: bool| ArrowError::ExternalError(Box::new(SparkError::parquet_read_ancient_datetime(int96)));
    let days = |mode: RebaseMode| -> Result<Date32Array, ArrowError> {
        let a = match array.data_type() {
            DataType::Int32 => array.as_primitive::<arrow::datatypes::Int32Type>().reinterpret_cast::<Date32Type>(),
            _ => array.as_primitive::<Date32Type>().clone(),
        };
        match mode {
            RebaseMode::Corrected => Ok(a),
            RebaseMode::Exception if any_below(&a, rebase.last_switch_julian_day) => Err(ancient(false)),
            RebaseMode::Exception => Ok(a),
            RebaseMode::Legacy if !any_below(&a, rebase.last_switch_julian_day) => Ok(a),
            RebaseMode::Legacy => Ok(a.unary(rebase_julian_to_gregorian_days)),
        }
    };
    let overflow = || failed_read(path, format!("column {column}: long overflow"));
    match convert {
        Convert::Days(mode) => Ok(Arc::new(days(*mode)?)),
        Convert::DaysAsMicros(mode) => {
            let a = days(*mode)?;
            let micros: PrimitiveArray<TimestampMicrosecondType> =
                a.try_unary(|d| (d as i64).checked_mul(MICROS_PER_DAY).ok_or_else(overflow))?;
            Ok(Arc::new(micros))
        }
        Convert::Timestamp { unit, rebase: mode, to } => {
            let micros: PrimitiveArray<TimestampMicrosecondType> = match unit {
                TimeUnit::Millisecond => array
                    .as_primitive::<TimestampMillisecondType>()
                    .try_unary(|ms| ms.checked_mul(1000).ok_or_else(overflow))?,
                _ => {
                    let a = array.as_primitive::<TimestampMicrosecondType>();
                    PrimitiveArray::new(a.values().clone(), a.nulls().cloned())
                }
            };
            let micros = match mode {
                Some(r) => {
                    let below = || any_below(&micros, rebase.last_switch_julian_ts);
                    match (r.mode, &r.zone.table) {
                        (RebaseMode::Corrected, _) => micros,
                        (RebaseMode::Exception, _) if below() => return Err(ancient(r.int96)),
                        (RebaseMode::Exception, _) => micros,
                        (RebaseMode::Legacy, _) if !below() => micros,
                        // Before year 1, or in a zone Spark has no table for, Spark rebases with the JVM's
                        // calendar: those values go to Spark's code, one call per batch.
                        (RebaseMode::Legacy, table) => {
                            let last = rebase.last_switch_julian_ts;
                            let mut values = micros.values().to_vec();
                            let mut pending = vec![];
                            for (i, v) in values.iter_mut().enumerate() {
                                if micros.is_valid(i) && *v < last {
                                    match table.as_ref().and_then(|t| t.rebase(*v, last)) {
                                        Some(rebased) => *v = rebased,
                                        None => pending.push(i),
                                    }
                                }
                            }
                            if !pending.is_empty() {
                                let calendar = CALENDAR_REBASE.get().ok_or_else(|| {
                                    failed_read(
                                        path,
                                        format!(
                                            "column {column}: a timestamp before year 1 or in time zone {} (no \
                                             rebase table in Spark) of a file written in Spark's legacy hybrid \
                                             calendar needs Spark's calendar, which this process does not have; \
                                             set spark.ember.exec.parquetScan.enabled=false to read this file \
                                             with Spark",
                                            r.zone.name
                                        ),
                                    )
                                })?;
                                let mut ancient: Vec<i64> = pending.iter().map(|&i| values[i]).collect();
                                calendar
                                    .rebase_micros(&r.zone.name, &mut ancient)
                                    .map_err(|e| failed_read(path, format!("column {column}: {e}")))?;
                                for (&i, v) in pending.iter().zip(ancient) {
                                    values[i] = v;
                                }
                            }
                            PrimitiveArray::new(values.into(), micros.nulls().cloned())
                        }
                    }
                }
                None => micros,
            };
            let values: ScalarBuffer<i64> = micros.values().clone();
            let out = PrimitiveArray::<TimestampMicrosecondType>::new(values, micros.nulls().cloned());
            Ok(Arc::new(match to {
                DataType::Timestamp(_, tz) => out.with_timezone_opt(tz.clone()),
                _ => out,
            }))
        }
        Convert::AsIs | Convert::CheckUtf8 | Convert::Cast(_) => Ok(array.clone()),
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
/// INT96 reads as micros (Spark's precision) instead of arrow-rs's nanos, which overflow outside 1677..2262.
fn int96_as_micros(
    meta: ArrowReaderMetadata,
    options: &ArrowReaderOptions,
) -> parquet::errors::Result<ArrowReaderMetadata> {
    let roots = meta.parquet_schema().root_schema().get_fields();
    let int96 = |t: &parquet::schema::types::TypePtr| t.is_primitive() && t.get_physical_type() == PhysicalType::INT96;
    if !roots.iter().any(int96) {
        return Ok(meta);
    }
    let fields: Vec<Field> = meta
        .schema()
        .fields()
        .iter()
        .zip(roots)
        .map(|(f, t)| match int96(t) {
            true => f.as_ref().clone().with_data_type(DataType::Timestamp(TimeUnit::Microsecond, None)),
            false => f.as_ref().clone(),
        })
        .collect();
    let hint = Arc::new(Schema::new_with_metadata(fields, meta.schema().metadata().clone()));
    ArrowReaderMetadata::try_new(meta.metadata().clone(), options.clone().with_schema(hint))
}

/// The file's metadata with the root columns `roots` (BYTE_ARRAY) stripped of their string annotation: they read
/// as `Binary`, Spark's bytes as they are, with nothing validated (arrow-rs validates exactly the columns
/// annotated UTF8). Row groups, statistics and page indexes stay the file's.
fn strings_as_bytes(
    meta: &ArrowReaderMetadata,
    roots: &[usize],
    options: &ArrowReaderOptions,
) -> parquet::errors::Result<ArrowReaderMetadata> {
    use parquet::file::metadata::{FileMetaData, ParquetMetaDataBuilder};
    use parquet::schema::types::{SchemaDescriptor, Type};
    let pq = meta.metadata();
    let file = pq.file_metadata();
    let root = file.schema_descr().root_schema();
    let fields = root
        .get_fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            if !roots.contains(&i) {
                return Ok(f.clone());
            }
            let info = f.get_basic_info();
            let mut plain = Type::primitive_type_builder(info.name(), f.get_physical_type());
            if info.has_repetition() {
                plain = plain.with_repetition(info.repetition());
            }
            if info.has_id() {
                plain = plain.with_id(Some(info.id()));
            }
            Ok(Arc::new(plain.build()?))
        })
        .collect::<parquet::errors::Result<Vec<_>>>()?;
    let root = Type::group_type_builder(root.name()).with_fields(fields).build()?;
    let file = FileMetaData::new(
        file.version(),
        file.num_rows(),
        file.created_by().map(str::to_string),
        file.key_value_metadata().cloned(),
        Arc::new(SchemaDescriptor::new(Arc::new(root))),
        file.column_orders().cloned(),
    );
    let rewritten = ParquetMetaDataBuilder::new(file)
        .set_row_groups(pq.row_groups().to_vec())
        .set_column_index(pq.column_index().cloned())
        .set_offset_index(pq.offset_index().cloned())
        .build();
    let plain = ArrowReaderMetadata::try_new(Arc::new(rewritten), options.clone())?;
    int96_as_micros(plain, options)
}

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

    /// Spark's `RebaseDateTime.lastSwitchJulianTs` (1900-01-01T00:00:00Z: the latest switch of any zone's
    /// rules in its tables), as the JVM sends it.
    const LAST_SWITCH_JULIAN_TS: i64 = -2_208_988_800_000_000;

    fn defaults() -> DatetimeRebase {
        DatetimeRebase::spark_defaults(LAST_SWITCH_JULIAN_TS)
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
        ParquetScanReader::new(schema, names, case_sensitive, defaults(), splits, batch, || Ok(()))?.collect()
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
                    partition_values: vec![],
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
        let split =
            vec![ParquetSplit { path, start: 0, length: size, display_path: String::new(), partition_values: vec![] }];
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
                partition_values: vec![],
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

    /// A JSON-annotated column (Spark reads it as a string; arrow-rs validates only UTF8-annotated ones): read as
    /// text its values are checked, invalid bytes failing the read; read as bytes they come through as written.
    #[test]
    fn json_columns_are_checked_as_text_and_pass_as_bytes() {
        use parquet::data_type::{ByteArray, ByteArrayType};
        use parquet::file::writer::SerializedFileWriter;
        use parquet::schema::parser::parse_message_type;
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, values: &[&[u8]]| {
            let path = dir.path().join(name);
            let schema = Arc::new(parse_message_type("message m { required binary j (JSON); }").unwrap());
            let mut w = SerializedFileWriter::new(File::create(&path).unwrap(), schema, Default::default()).unwrap();
            let mut rg = w.next_row_group().unwrap();
            let mut col = rg.next_column().unwrap().unwrap();
            let data: Vec<ByteArray> = values.iter().map(|v| ByteArray::from(v.to_vec())).collect();
            col.typed::<ByteArrayType>().write_batch(&data, None, None).unwrap();
            col.close().unwrap();
            rg.close().unwrap();
            w.close().unwrap();
            whole(&path)
        };
        let text = || vec![Field::new("c0", DataType::Utf8, true)];
        let good = read(text(), &["j"], false, write("good.parquet", &[b"{}", "{\"a\":\"\u{fc}\"}".as_bytes()]), 10);
        assert_eq!(good.unwrap()[0].column(0).as_string::<i32>().value(0), "{}");
        let bad = write("bad.parquet", &[b"{}", &[0x7b, 0xff, 0x7d]]);
        let err = read(text(), &["j"], false, bad.clone(), 10).unwrap_err().to_string();
        assert!(err.contains("bad.parquet") && err.contains("not valid UTF-8"), "{err}");
        let bytes = read(vec![Field::new("c0", DataType::Binary, true)], &["j"], false, bad, 10).unwrap();
        assert_eq!(bytes[0].column(0).as_binary::<i32>().value(1), &[0x7b, 0xff, 0x7d]);
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
        let split = vec![ParquetSplit {
            path: p.clone(),
            start: 0,
            length: 1 << 20,
            display_path: String::new(),
            partition_values: vec![],
        }];
        let field = || vec![Field::new("c0", DataType::Int64, true)];
        let err = read(field(), &["a"], false, split.clone(), 10).unwrap_err();
        // Spark's FAILED_READ_FILE.NO_HINT over its duplicate-field condition.
        let ArrowError::ExternalError(inner) = err else { panic!("not a Spark error: {err}") };
        let spark = inner.downcast::<SparkError>().expect("a Spark error");
        assert_eq!(spark.error_class, "FAILED_READ_FILE.NO_HINT");
        let cause = spark.cause_error.expect("a Spark condition as the cause");
        assert_eq!(cause.error_class, "_LEGACY_ERROR_TEMP_2093");
        let expected = [("requiredFieldName", "a"), ("matchedOrcFields", "[a, A]")];
        assert_eq!(cause.params, expected.map(|(k, v)| (k.to_string(), v.to_string())).to_vec());
        assert_eq!(ids(&read(field(), &["A"], true, split, 10).unwrap(), 0), vec![1, 2]);
        let missing = vec![ParquetSplit {
            path: format!("{p}.nope"),
            start: 0,
            length: 1,
            display_path: String::new(),
            partition_values: vec![],
        }];
        assert!(read(field(), &["a"], false, missing, 10).unwrap_err().to_string().contains(".nope"));
        let junk = dir.path().join("junk.parquet");
        std::fs::write(&junk, b"not parquet at all").unwrap();
        let split = vec![ParquetSplit {
            path: junk.to_str().unwrap().into(),
            start: 0,
            length: 18,
            display_path: String::new(),
            partition_values: vec![],
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
            vec![ParquetSplit {
                path: p.to_string(),
                start: 0,
                length,
                display_path: format!("file://{p}"),
                partition_values: vec![],
            }]
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
        let split =
            vec![ParquetSplit { path, start: 0, length: size, display_path: String::new(), partition_values: vec![] }];
        let killed = crate::operators::shared::killed_after(2);
        let reader = ParquetScanReader::new(schema, vec!["id".into()], false, defaults(), split, 100, killed).unwrap();
        let got: Vec<_> = reader.collect();
        assert_eq!(got.len(), 3);
        assert!(got[2].as_ref().unwrap_err().to_string().contains("task killed"));
    }

    /// A split over the whole of a file.
    fn whole(path: &std::path::Path) -> Vec<ParquetSplit> {
        vec![ParquetSplit {
            path: path.to_str().unwrap().to_string(),
            start: 0,
            length: 1 << 30,
            display_path: String::new(),
            partition_values: vec![],
        }]
    }

    fn kv(pairs: &[(&str, &str)]) -> Option<Vec<KeyValue>> {
        Some(pairs.iter().map(|(k, v)| KeyValue::new(k.to_string(), v.to_string())).collect())
    }

    /// A file of one column, with the given key-value metadata.
    fn write_one(path: &std::path::Path, field: Field, array: ArrayRef, meta: &[(&str, &str)]) -> Vec<ParquetSplit> {
        let schema = Arc::new(Schema::new(vec![field]));
        let props = WriterProperties::builder().set_key_value_metadata(kv(meta)).build();
        let mut w = ArrowWriter::try_new(File::create(path).unwrap(), schema.clone(), Some(props)).unwrap();
        w.write(&RecordBatch::try_new(schema, vec![array]).unwrap()).unwrap();
        w.close().unwrap();
        whole(path)
    }

    fn read_with(
        field: Field,
        name: &str,
        rebase: DatetimeRebase,
        splits: Vec<ParquetSplit>,
    ) -> Result<ArrayRef, ArrowError> {
        let schema = Arc::new(Schema::new(vec![field]));
        let batches: Vec<RecordBatch> =
            ParquetScanReader::new(schema.clone(), vec![name.to_string()], false, rebase, splits, 1000, || Ok(()))?
                .collect::<Result<_, _>>()?;
        let arrays: Vec<&dyn Array> = batches.iter().map(|b| b.column(0).as_ref()).collect();
        arrow::compute::concat(&arrays)
    }

    fn modes(datetime: RebaseMode, int96: RebaseMode) -> DatetimeRebase {
        DatetimeRebase { datetime_mode: datetime, int96_mode: int96, ..defaults() }
    }

    fn upgrade_error(e: ArrowError) -> (String, Vec<(String, String)>) {
        match e {
            ArrowError::ExternalError(inner) => {
                let spark = inner.downcast::<SparkError>().expect("a Spark error");
                assert_eq!(spark.kind, crate::error::SparkExceptionKind::Upgrade, "{spark}");
                (spark.error_class.clone(), spark.params.clone())
            }
            other => panic!("not a Spark error: {other}"),
        }
    }

    fn params(format: &str, config: &str, option: &str) -> Vec<(String, String)> {
        vec![
            ("format".to_string(), format.to_string()),
            ("config".to_string(), format!("\"{config}\"")),
            ("option".to_string(), format!("\"{option}\"")),
        ]
    }

    #[test]
    fn julian_days_rebase_as_sparks_switch_table() {
        // 0001-01-01 and 1582-10-04 in the hybrid calendar are these days in the proleptic Gregorian one.
        assert_eq!(rebase_julian_to_gregorian_days(-719164), -719162);
        assert_eq!(rebase_julian_to_gregorian_days(-141428), -141438);
        // From 1582-10-15 on the calendars agree; before 0001-01-01 the difference stays 2 days.
        for d in [-141427, 0, 2_932_896, i32::MAX] {
            assert_eq!(rebase_julian_to_gregorian_days(d), d);
        }
        assert_eq!(rebase_julian_to_gregorian_days(-800_000), -799_998);
        assert_eq!(rebase_julian_to_gregorian_days(i32::MIN), i32::MIN + 2);
    }

    #[test]
    fn dates_read_in_every_rebase_mode_and_by_file_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let values = vec![Some(-719164), Some(-141428), None, Some(-141427), Some(0), Some(2_932_896)];
        let array: ArrayRef = Arc::new(Date32Array::from(values.clone()));
        let field = || Field::new("d", DataType::Date32, true);
        let plain = write_one(&dir.path().join("plain.parquet"), field(), array.clone(), &[]);
        let date = |a: &ArrayRef| a.as_primitive::<Date32Type>().iter().collect::<Vec<_>>();
        // CORRECTED: as written.
        let got = read_with(field(), "d", modes(RebaseMode::Corrected, RebaseMode::Exception), plain.clone()).unwrap();
        assert_eq!(date(&got), values);
        // EXCEPTION: Spark's upgrade error, with its parameters.
        let err = read_with(field(), "d", defaults(), plain.clone()).unwrap_err();
        assert_eq!(
            upgrade_error(err),
            (
                "INCONSISTENT_BEHAVIOR_CROSS_VERSION.READ_ANCIENT_DATETIME".to_string(),
                params("Parquet", "spark.sql.parquet.datetimeRebaseModeInRead", "datetimeRebaseMode")
            )
        );
        // LEGACY: rebased from the hybrid calendar.
        let got = read_with(field(), "d", modes(RebaseMode::Legacy, RebaseMode::Exception), plain).unwrap();
        let rebased: Vec<Option<i32>> = values.iter().map(|v| v.map(rebase_julian_to_gregorian_days)).collect();
        assert_eq!(date(&got), rebased);
        // EXCEPTION over modern dates only (a NULL slot holds no value to check).
        let modern: ArrayRef = Arc::new(Date32Array::from(vec![Some(-141427), None, Some(19000)]));
        let ok = write_one(&dir.path().join("modern.parquet"), field(), modern, &[]);
        assert_eq!(date(&read_with(field(), "d", defaults(), ok).unwrap()), vec![Some(-141427), None, Some(19000)]);
        // A file written by Spark says how: 3.x CORRECTED whatever the configured mode, 2.x or a legacy flag LEGACY.
        for (meta, legacy) in [
            (vec![(SPARK_VERSION_KEY, "3.5.1")], false),
            (vec![(SPARK_VERSION_KEY, "2.4.5")], true),
            (vec![(SPARK_VERSION_KEY, "3.5.1"), (SPARK_LEGACY_DATETIME_KEY, "")], true),
            // The INT96 flag says nothing about dates.
            (vec![(SPARK_VERSION_KEY, "3.0.0"), (SPARK_LEGACY_INT96_KEY, "")], false),
        ] {
            let path = dir.path().join(format!("meta{}.parquet", meta.len() * 10 + legacy as usize));
            let split = write_one(&path, field(), array.clone(), &meta);
            let got = read_with(field(), "d", defaults(), split).unwrap();
            assert_eq!(date(&got), if legacy { rebased.clone() } else { values.clone() }, "{meta:?}");
        }
    }

    #[test]
    fn int64_timestamps_micros_and_millis_as_spark_reads_them() {
        let dir = tempfile::tempdir().unwrap();
        let ancient = -62_135_596_800_000_000i64; // 0001-01-01T00:00:00Z
        let micros = vec![
            Some(ancient),
            Some(LAST_SWITCH_JULIAN_TS - 1),
            None,
            Some(LAST_SWITCH_JULIAN_TS),
            Some(0),
            Some(253_402_300_799_999_999),
        ];
        let utc = Some(Arc::from("UTC"));
        let us: ArrayRef =
            Arc::new(PrimitiveArray::<TimestampMicrosecondType>::from(micros.clone()).with_timezone_opt(utc.clone()));
        let ms_values: Vec<Option<i64>> = micros.iter().map(|v| v.map(|v| v.div_euclid(1000))).collect();
        let ms: ArrayRef = Arc::new(PrimitiveArray::<TimestampMillisecondType>::from(ms_values.clone()));
        let us_file = write_one(
            &dir.path().join("us.parquet"),
            Field::new("t", DataType::Timestamp(TimeUnit::Microsecond, utc.clone()), true),
            us,
            &[],
        );
        let ms_file = write_one(
            &dir.path().join("ms.parquet"),
            Field::new("t", DataType::Timestamp(TimeUnit::Millisecond, None), true),
            ms,
            &[],
        );
        let ltz = || {
            Field::new("c", DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("America/Los_Angeles"))), true)
        };
        let ntz = || Field::new("c", DataType::Timestamp(TimeUnit::Microsecond, None), true);
        let values = |a: &ArrayRef| a.as_primitive::<TimestampMicrosecondType>().iter().collect::<Vec<_>>();
        let millis_as_micros: Vec<Option<i64>> = ms_values.iter().map(|v| v.map(|v| v * 1000)).collect();
        for (file, expected) in [(&us_file, micros.clone()), (&ms_file, millis_as_micros)] {
            let corrected = modes(RebaseMode::Corrected, RebaseMode::Exception);
            let got = read_with(ltz(), "T", corrected, file.clone()).unwrap();
            assert_eq!(got.data_type(), ltz().data_type());
            assert_eq!(values(&got), expected);
            // EXCEPTION: the upgrade error, for TIMESTAMP; TIMESTAMP_NTZ has no legacy files.
            let err = read_with(ltz(), "t", defaults(), file.clone()).unwrap_err();
            assert_eq!(
                upgrade_error(err).1,
                params("Parquet", "spark.sql.parquet.datetimeRebaseModeInRead", "datetimeRebaseMode")
            );
            let got = read_with(ntz(), "t", defaults(), file.clone()).unwrap();
            assert_eq!((got.data_type(), values(&got)), (ntz().data_type(), expected.clone()));
            // LEGACY with values before the last switch: not rebased here, the read fails saying so.
            let legacy = modes(RebaseMode::Legacy, RebaseMode::Exception);
            let err = read_with(ltz(), "t", legacy, file.clone()).unwrap_err().to_string();
            assert!(err.contains("spark.ember.exec.parquetScan.enabled"), "{err}");
        }
        // LEGACY and EXCEPTION over modern values only: as they are.
        let modern: ArrayRef = Arc::new(PrimitiveArray::<TimestampMicrosecondType>::from(vec![
            Some(LAST_SWITCH_JULIAN_TS),
            None,
            Some(7),
        ]));
        let split = write_one(
            &dir.path().join("modern.parquet"),
            Field::new("t", DataType::Timestamp(TimeUnit::Microsecond, None), true),
            modern,
            &[],
        );
        for rebase in [defaults(), modes(RebaseMode::Legacy, RebaseMode::Legacy)] {
            assert_eq!(
                values(&read_with(ltz(), "t", rebase, split.clone()).unwrap()),
                vec![Some(LAST_SWITCH_JULIAN_TS), None, Some(7)]
            );
        }
        // A DATE read as TIMESTAMP_NTZ: UTC midnight, its days rebased per the datetime mode.
        let days: ArrayRef = Arc::new(Date32Array::from(vec![Some(-141428), None, Some(1)]));
        let split = write_one(&dir.path().join("days.parquet"), Field::new("t", DataType::Date32, true), days, &[]);
        let got = read_with(ntz(), "t", modes(RebaseMode::Legacy, RebaseMode::Exception), split.clone()).unwrap();
        assert_eq!(values(&got), vec![Some(-141438 * MICROS_PER_DAY), None, Some(MICROS_PER_DAY)]);
        assert!(read_with(ntz(), "t", defaults(), split.clone()).is_err());
        // A timestamp is no date.
        let err = read_with(Field::new("c", DataType::Date32, true), "t", defaults(), us_file).unwrap_err();
        assert!(
            err.to_string().contains("PARQUET_COLUMN_DATA_TYPE_MISMATCH") && err.to_string().contains("INT64"),
            "{err}"
        );
    }

    /// LEGACY timestamps rebased by a zone's table (Spark's `rebaseMicros`: the latest switch at or before a
    /// value gives its difference), in the zone the file names; a value before the first switch, or a zone
    /// without a table, fails the read naming the key; values from the last switch on read as written.
    #[test]
    fn legacy_timestamps_rebased_by_the_zone_table() {
        const L: i64 = LAST_SWITCH_JULIAN_TS;
        let table = ZoneRebase::new(vec![L - 1_000, L - 500, L - 10], vec![30, -20, 0]).unwrap();
        assert!(ZoneRebase::new(vec![2, 1], vec![0, 0]).is_err());
        register_julian_rebase([("Test/Legacy".to_string(), Arc::new(table))].into());
        let dir = tempfile::tempdir().unwrap();
        let ltz = || Field::new("c", DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC"))), true);
        let values = |a: &ArrayRef| a.as_primitive::<TimestampMicrosecondType>().iter().collect::<Vec<_>>();
        let write = |name: &str, v: Vec<Option<i64>>, meta: &[(&str, &str)]| {
            let array: ArrayRef = Arc::new(PrimitiveArray::<TimestampMicrosecondType>::from(v));
            let field = Field::new("t", DataType::Timestamp(TimeUnit::Microsecond, None), true);
            write_one(&dir.path().join(name), field, array, meta)
        };
        let legacy =
            [(SPARK_VERSION_KEY, "3.5.0"), (SPARK_LEGACY_DATETIME_KEY, ""), (SPARK_TIMEZONE_KEY, "Test/Legacy")];
        let file = write("zoned.parquet", vec![Some(L - 1_000), Some(L - 501), None, Some(L - 500), Some(L)], &legacy);
        assert_eq!(
            values(&read_with(ltz(), "t", defaults(), file).unwrap()),
            vec![Some(L - 970), Some(L - 471), None, Some(L - 520), Some(L)]
        );
        let early = write("early.parquet", vec![Some(L - 1_001)], &legacy);
        let err = read_with(ltz(), "t", defaults(), early).unwrap_err().to_string();
        assert!(err.contains("spark.ember.exec.parquetScan.enabled") && err.contains("Test/Legacy"), "{err}");
        // No zone in the file: the reader's default zone (here without a table).
        let unzoned = write("unzoned.parquet", vec![Some(L - 600)], &legacy[..2]);
        let err = read_with(ltz(), "t", defaults(), unzoned).unwrap_err().to_string();
        assert!(err.contains("time zone UTC"), "{err}");
    }

    /// An INT96 file (as Spark and Hive write them: Julian day + nanos of day), written with the low-level API.
    fn write_int96(path: &std::path::Path, values: &[Option<(i32, i64)>], meta: &[(&str, &str)]) -> Vec<ParquetSplit> {
        use parquet::data_type::{Int96, Int96Type};
        use parquet::file::writer::SerializedFileWriter;
        use parquet::schema::parser::parse_message_type;
        let schema = Arc::new(parse_message_type("message spark_schema { optional int96 t; }").unwrap());
        let props = Arc::new(WriterProperties::builder().set_key_value_metadata(kv(meta)).build());
        let mut w = SerializedFileWriter::new(File::create(path).unwrap(), schema, props).unwrap();
        let mut rg = w.next_row_group().unwrap();
        let mut col = rg.next_column().unwrap().unwrap();
        let data: Vec<Int96> = values
            .iter()
            .flatten()
            .map(|(day, nanos)| {
                let mut v = Int96::new();
                v.set_data(*nanos as u32, (*nanos >> 32) as u32, *day as u32);
                v
            })
            .collect();
        let levels: Vec<i16> = values.iter().map(|v| i16::from(v.is_some())).collect();
        col.typed::<Int96Type>().write_batch(&data, Some(&levels), None).unwrap();
        col.close().unwrap();
        rg.close().unwrap();
        w.close().unwrap();
        whole(path)
    }

    #[test]
    fn int96_timestamps_as_spark_reads_them() {
        let dir = tempfile::tempdir().unwrap();
        // 0001-01-01 (Julian day 1721424), just before 1900, the epoch, and 9999-12-31T23:59:59.999999999 (far
        // beyond arrow-rs's nanosecond range): Spark's micros truncate the nanos.
        let raw = [
            Some((1_721_424, 1_999)),
            Some((2_415_020, 86_399_999_999_999)),
            None,
            Some((2_440_588, 0)),
            Some((5_373_484, 86_399_999_999_999)),
        ];
        let expected: Vec<Option<i64>> =
            raw.iter().map(|v| v.map(|(d, n)| (d as i64 - 2_440_588) * MICROS_PER_DAY + n / 1000)).collect();
        assert_eq!(expected[1], Some(LAST_SWITCH_JULIAN_TS - 1));
        let ltz = || Field::new("c", DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC"))), true);
        let ntz = || Field::new("c", DataType::Timestamp(TimeUnit::Microsecond, None), true);
        let values = |a: &ArrayRef| a.as_primitive::<TimestampMicrosecondType>().iter().collect::<Vec<_>>();
        let plain = write_int96(&dir.path().join("plain.parquet"), &raw, &[]);
        let corrected = modes(RebaseMode::Exception, RebaseMode::Corrected);
        assert_eq!(values(&read_with(ltz(), "t", corrected, plain.clone()).unwrap()), expected);
        assert_eq!(values(&read_with(ntz(), "t", defaults(), plain.clone()).unwrap()), expected);
        let err =
            read_with(ltz(), "t", modes(RebaseMode::Corrected, RebaseMode::Exception), plain.clone()).unwrap_err();
        assert_eq!(
            upgrade_error(err).1,
            params("Parquet INT96", "spark.sql.parquet.int96RebaseModeInRead", "int96RebaseMode")
        );
        // The datetime mode says nothing about INT96.
        assert!(read_with(ltz(), "t", modes(RebaseMode::Exception, RebaseMode::Corrected), plain).is_ok());
        // Spark 3.0 wrote INT96 in the hybrid calendar (LEGACY): ancient values are not rebased here; 3.1+
        // without the flag: CORRECTED.
        let old = write_int96(&dir.path().join("v30.parquet"), &raw, &[(SPARK_VERSION_KEY, "3.0.3")]);
        assert!(read_with(ltz(), "t", corrected, old).unwrap_err().to_string().contains("legacy hybrid calendar"));
        let new = write_int96(&dir.path().join("v35.parquet"), &raw, &[(SPARK_VERSION_KEY, "3.5.0")]);
        assert_eq!(values(&read_with(ltz(), "t", defaults(), new).unwrap()), expected);
        let flagged = write_int96(
            &dir.path().join("v35l.parquet"),
            &raw[3..],
            &[(SPARK_VERSION_KEY, "3.5.0"), (SPARK_LEGACY_INT96_KEY, "")],
        );
        assert_eq!(values(&read_with(ltz(), "t", defaults(), flagged).unwrap()), expected[3..].to_vec());
    }

    #[test]
    fn partition_values_are_constant_columns_after_the_data_columns() {
        let dir = tempfile::tempdir().unwrap();
        let (path, size) = write_file(dir.path(), 1000, 300);
        let split = |values: Vec<ScalarValue>| ParquetSplit {
            path: path.clone(),
            start: 0,
            length: size,
            display_path: String::new(),
            partition_values: values,
        };
        let schema = Arc::new(Schema::new(vec![
            Field::new("c0", DataType::Int64, true),
            Field::new("p0", DataType::Int32, true),
            Field::new("p1", DataType::Utf8, true),
            Field::new("p2", DataType::Date32, true),
        ]));
        let splits = vec![
            split(vec![
                ScalarValue::Int32(Some(7)),
                ScalarValue::Utf8(Some("ü€".into())),
                ScalarValue::Date32(Some(-1)),
            ]),
            split(vec![ScalarValue::Int32(None), ScalarValue::Utf8(None), ScalarValue::Date32(None)]),
        ];
        let batches: Vec<RecordBatch> =
            ParquetScanReader::new(schema.clone(), vec!["id".into()], false, defaults(), splits, 256, || Ok(()))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 2000);
        let mut seen = 0;
        for b in &batches {
            assert_eq!(b.schema(), schema);
            let first = seen < 1000;
            seen += b.num_rows();
            if first {
                assert!(b.column(1).as_primitive::<arrow::datatypes::Int32Type>().iter().all(|v| v == Some(7)));
                assert!(b.column(2).as_string::<i32>().iter().all(|v| v == Some("ü€")));
                assert!(b.column(3).as_primitive::<Date32Type>().iter().all(|v| v == Some(-1)));
            } else {
                assert!((1..4).all(|c| b.column(c).null_count() == b.num_rows()));
            }
        }
        // Values that do not fit the schema's partition columns are refused up front.
        let bad = vec![split(vec![ScalarValue::Int64(Some(1)), ScalarValue::Utf8(None), ScalarValue::Date32(None)])];
        assert!(ParquetScanReader::new(schema, vec!["id".into()], false, defaults(), bad, 10, || Ok(())).is_err());
    }

    #[test]
    fn row_groups_skipped_only_where_statistics_prove_no_row_passes() {
        let dir = tempfile::tempdir().unwrap();
        // 10 row groups of 100 sorted ids; `v` NULL in the first group; strings sorted by id.
        let (path, size) = write_file(dir.path(), 1000, 100);
        let split = || {
            vec![ParquetSplit {
                path: path.clone(),
                start: 0,
                length: size,
                display_path: String::new(),
                partition_values: vec![],
            }]
        };
        let schema = Arc::new(Schema::new(vec![
            Field::new("c0", DataType::Int64, true),
            Field::new("c1", DataType::Int32, true),
            Field::new("c2", DataType::Utf8, true),
        ]));
        let run = |filters: Vec<ScanFilter>| -> (usize, u64) {
            let pruned = Arc::new(std::sync::atomic::AtomicU64::new(0));
            let counter = pruned.clone();
            let reader = ParquetScanReader::new(
                schema.clone(),
                vec!["id".into(), "v".into(), "s".into()],
                false,
                defaults(),
                split(),
                1000,
                || Ok(()),
            )
            .unwrap()
            .with_filters(
                filters,
                Box::new(move |p| {
                    counter.fetch_add(p.row_groups, std::sync::atomic::Ordering::Relaxed);
                    Ok(())
                }),
            )
            .with_row_filter(false);
            let rows = reader.map(|b| b.unwrap().num_rows()).sum();
            (rows, pruned.load(std::sync::atomic::Ordering::Relaxed))
        };
        let f = |column, op, values: Vec<ScalarValue>| ScanFilter { column, op, values };
        let long = |v| ScalarValue::Int64(Some(v));
        assert_eq!(run(vec![]), (1000, 0));
        assert_eq!(run(vec![f(0, FilterOp::Lt, vec![long(150)])]), (200, 8));
        assert_eq!(run(vec![f(0, FilterOp::Lt, vec![long(100)])]), (100, 9));
        assert_eq!(run(vec![f(0, FilterOp::Le, vec![long(100)])]), (200, 8));
        assert_eq!(run(vec![f(0, FilterOp::Gt, vec![long(899)])]), (100, 9));
        assert_eq!(run(vec![f(0, FilterOp::Ge, vec![long(899)])]), (200, 8));
        assert_eq!(run(vec![f(0, FilterOp::Eq, vec![long(555)])]), (100, 9));
        assert_eq!(run(vec![f(0, FilterOp::In, vec![long(5), ScalarValue::Int64(None), long(999)])]), (200, 8));
        // Conjuncts: each may rule a group out.
        assert_eq!(run(vec![f(0, FilterOp::Ge, vec![long(500)]), f(0, FilterOp::Lt, vec![long(600)])]), (100, 9));
        // INT column (every 7th value NULL), its literal widened to the column's type.
        assert_eq!(run(vec![f(1, FilterOp::Gt, vec![ScalarValue::Int32(Some(2990))])]), (100, 9));
        assert_eq!(run(vec![f(1, FilterOp::IsNull, vec![])]), (1000, 0));
        assert_eq!(run(vec![f(1, FilterOp::IsNotNull, vec![])]), (1000, 0));
        assert_eq!(run(vec![f(0, FilterOp::IsNull, vec![])]), (0, 10));
        // Strings by byte order ("row 10" < "row 9").
        assert_eq!(run(vec![f(2, FilterOp::Eq, vec![ScalarValue::Utf8(Some("row 0".into()))])]), (100, 9));
        assert_eq!(run(vec![f(2, FilterOp::Gt, vec![ScalarValue::Utf8(Some("zz".into()))])]), (0, 10));
        // Nothing is proved by a NULL literal, a literal of another type, or no statistics.
        assert_eq!(run(vec![f(0, FilterOp::Eq, vec![ScalarValue::Int64(None)])]), (1000, 0));
        assert_eq!(run(vec![f(0, FilterOp::Eq, vec![ScalarValue::Float64(Some(1.0))])]), (1000, 0));
    }
    /// A file of `rows` rows sorted by `id` (BIGINT), with INT `v`, DATE `d`, STRING `s` (multi-byte) and
    /// DECIMAL(10,2) `m`, each with NULLs, in row groups of `group` rows and pages of 50 rows; `ancient`: one
    /// date before 1582 (at id 5).
    fn write_typed(dir: &std::path::Path, rows: i64, group: usize, seed: u64, ancient: bool) -> Vec<ParquetSplit> {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("v", DataType::Int32, true),
            Field::new("d", DataType::Date32, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("m", DataType::Decimal128(10, 2), true),
        ]));
        let path = dir.join(format!("typed{seed}{ancient}.parquet"));
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(group))
            .set_data_page_row_count_limit(50)
            .set_write_batch_size(50)
            .build();
        let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), schema.clone(), Some(props)).unwrap();
        let words = ["", "a", "ab", "b", "é", "ü€", "z", "日本", "\u{1F600}"];
        let ids: Vec<i64> = (0..rows).collect();
        let v: Int32Array = ids.iter().map(|_| rng.random_bool(0.9).then(|| rng.random_range(-20..20))).collect();
        let d: Date32Array = ids
            .iter()
            .map(|i| match *i {
                5 if ancient => Some(-200_000),
                _ => rng.random_bool(0.9).then(|| rng.random_range(-7000..20000)),
            })
            .collect();
        let s: StringArray =
            ids.iter().map(|_| rng.random_bool(0.9).then(|| words[rng.random_range(0..words.len())])).collect();
        let m = arrow::array::Decimal128Array::from(
            ids.iter().map(|_| rng.random_bool(0.9).then(|| rng.random_range(-500i128..500))).collect::<Vec<_>>(),
        )
        .with_precision_and_scale(10, 2)
        .unwrap();
        let columns: Vec<ArrayRef> =
            vec![Arc::new(Int64Array::from(ids)), Arc::new(v), Arc::new(d), Arc::new(s), Arc::new(m)];
        w.write(&RecordBatch::try_new(schema, columns).unwrap()).unwrap();
        w.close().unwrap();
        whole(&path)
    }

    fn typed_fields() -> (Vec<Field>, Vec<&'static str>) {
        let fields = vec![
            Field::new("c0", DataType::Int64, true),
            Field::new("c1", DataType::Int32, true),
            Field::new("c2", DataType::Date32, true),
            Field::new("c3", DataType::Utf8, true),
            Field::new("c4", DataType::Decimal128(10, 2), true),
        ];
        (fields, vec!["id", "v", "d", "s", "m"])
    }

    /// Reads `splits` with `filters`; the rows and what the reader reported skipping.
    fn read_filtered(
        splits: Vec<ParquetSplit>,
        filters: Vec<ScanFilter>,
        filter_rows: bool,
    ) -> Result<(Vec<RecordBatch>, ScanPruning), ArrowError> {
        let (fields, names) = typed_fields();
        let seen = Arc::new(std::sync::Mutex::new(ScanPruning::default()));
        let sink = seen.clone();
        let reader = ParquetScanReader::new(
            Arc::new(Schema::new(fields)),
            names.iter().map(|n| n.to_string()).collect(),
            false,
            defaults(),
            splits,
            64,
            || Ok(()),
        )?
        .with_filters(
            filters,
            Box::new(move |p| {
                let mut s = sink.lock().unwrap();
                s.row_groups += p.row_groups;
                s.pages += p.pages;
                s.rows += p.rows;
                Ok(())
            }),
        )
        .with_row_filter(filter_rows)
        .with_row_filter_pause(0);
        let batches = reader.collect::<Result<Vec<_>, _>>()?;
        let seen = *seen.lock().unwrap();
        Ok((batches, seen))
    }

    /// Spark's value of conjunct `f` on row `row` of `batch`: Some(true) passes.
    fn spark_truth(f: &ScanFilter, batch: &RecordBatch, row: usize) -> Option<bool> {
        use std::cmp::Ordering;
        let column = batch.column(f.column);
        let value = ScalarValue::try_from_array(column, row).unwrap();
        match f.op {
            FilterOp::IsNull => return Some(value.is_null()),
            FilterOp::IsNotNull => return Some(!value.is_null()),
            _ => {}
        }
        if value.is_null() {
            return None;
        }
        let cmp = |lit: &ScalarValue| -> Option<Ordering> {
            if lit.is_null() {
                return None;
            }
            Some(match (&value, lit) {
                (ScalarValue::Utf8(Some(a)), ScalarValue::Utf8(Some(b))) => a.as_bytes().cmp(b.as_bytes()),
                (a, b) => a.partial_cmp(b).expect("same types"),
            })
        };
        match f.op {
            FilterOp::In => {
                if f.values.iter().any(|l| cmp(l) == Some(Ordering::Equal)) {
                    Some(true)
                } else if f.values.iter().any(|l| l.is_null()) {
                    None
                } else {
                    Some(false)
                }
            }
            op => cmp(&f.values[0]).map(|o| match op {
                FilterOp::Eq => o == Ordering::Equal,
                FilterOp::Lt => o == Ordering::Less,
                FilterOp::Le => o != Ordering::Greater,
                FilterOp::Gt => o == Ordering::Greater,
                _ => o != Ordering::Less,
            }),
        }
    }

    /// Random conjuncts over every column type, literals drawn from the data (and NULLs): the reader returns
    /// exactly the rows where every conjunct is true, in file order, and reports the rest as skipped — with
    /// the row filter, and with pages alone (then a superset: whole pages).
    #[test]
    fn rows_filtered_in_the_reader_are_exactly_those_every_conjunct_passes() {
        use rand::{Rng, SeedableRng};
        let dir = tempfile::tempdir().unwrap();
        let splits = write_typed(dir.path(), 3000, 700, 7, false);
        let (all, _) = read_filtered(splits.clone(), vec![], true).unwrap();
        let all = arrow::compute::concat_batches(&all[0].schema(), &all).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let ops = [FilterOp::Eq, FilterOp::Lt, FilterOp::Le, FilterOp::Gt, FilterOp::Ge];
        let (mut skipped_pages, mut skipped_rows) = (0, 0);
        for case in 0..300 {
            let lit = |column: usize, rng: &mut rand::rngs::StdRng| {
                ScalarValue::try_from_array(all.column(column), rng.random_range(0..3000)).unwrap()
            };
            let filters: Vec<ScanFilter> = (0..rng.random_range(1..4))
                .map(|_| {
                    let column = rng.random_range(0..5);
                    match rng.random_range(0..10) {
                        0 => ScanFilter { column, op: FilterOp::IsNull, values: vec![] },
                        1 => ScanFilter { column, op: FilterOp::IsNotNull, values: vec![] },
                        2 => {
                            let values = (0..3).map(|_| lit(column, &mut rng)).collect();
                            ScanFilter { column, op: FilterOp::In, values }
                        }
                        _ => {
                            let op = ops[rng.random_range(0..5)];
                            ScanFilter { column, op, values: vec![lit(column, &mut rng)] }
                        }
                    }
                })
                .collect();
            let expected: Vec<i64> = (0..all.num_rows())
                .filter(|&r| filters.iter().all(|f| spark_truth(f, &all, r) == Some(true)))
                .map(|r| all.column(0).as_primitive::<Int64Type>().value(r))
                .collect();
            let (got, seen) = read_filtered(splits.clone(), filters.clone(), true).unwrap();
            assert_eq!(ids(&got, 0), expected, "case {case}: {filters:?}");
            // Every row of the row groups read is returned or reported skipped.
            let returned = got.iter().map(|b| b.num_rows() as u64).sum::<u64>();
            assert!(returned + seen.rows <= 3000, "case {case}");
            if seen.row_groups == 0 {
                assert_eq!(returned + seen.rows, 3000, "case {case}");
            }
            // Pages alone: whole pages, a superset of the rows that pass.
            let (pages, seen_pages) = read_filtered(splits.clone(), filters.clone(), false).unwrap();
            let pages = ids(&pages, 0);
            assert!(expected.iter().all(|id| pages.binary_search(id).is_ok()), "case {case}: {filters:?}");
            assert_eq!(seen_pages.pages, seen.pages, "case {case}");
            skipped_pages += seen_pages.pages;
            skipped_rows += seen.rows;
        }
        assert!(skipped_pages > 0 && skipped_rows > 0, "{skipped_pages} pages, {skipped_rows} rows");
    }

    /// Pages skipped by the page index on a sorted column, counted; with the row filter the rows are exact.
    #[test]
    fn pages_skipped_by_the_page_index_and_rows_by_the_row_filter() {
        let dir = tempfile::tempdir().unwrap();
        // 3000 sorted ids in row groups of 1000 and pages of 50 rows.
        let splits = write_typed(dir.path(), 3000, 1000, 3, false);
        let f = |op, v| ScanFilter { column: 0, op, values: vec![ScalarValue::Int64(Some(v))] };
        let filters = vec![f(FilterOp::Ge, 1225), f(FilterOp::Lt, 1360)];
        let (pages, seen) = read_filtered(splits.clone(), filters.clone(), false).unwrap();
        // Row group 1 alone; its pages 1200..1250, 1250..1300, 1300..1350, 1350..1400: 16 of 20 skipped.
        assert_eq!(ids(&pages, 0), (1200..1400).collect::<Vec<_>>());
        assert_eq!(seen, ScanPruning { row_groups: 2, pages: 16, rows: 800, ..Default::default() });
        let (rows, seen) = read_filtered(splits, filters, true).unwrap();
        assert_eq!(ids(&rows, 0), (1225..1360).collect::<Vec<_>>());
        assert_eq!(seen, ScanPruning { row_groups: 2, pages: 16, rows: 1000 - 135, ..Default::default() });
    }

    /// Bytes taken from the files and rows returned are reported (Spark's task input metrics): every row once,
    /// at most the files' sizes, and fewer bytes when row groups are pruned.
    #[test]
    fn bytes_and_rows_read_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let splits = write_typed(dir.path(), 3000, 1000, 3, false);
        let size: u64 = splits.iter().map(|s| std::fs::metadata(&s.path).unwrap().len()).sum();
        let read = |filters: Vec<ScanFilter>| {
            let (fields, names) = typed_fields();
            let total = Arc::new(std::sync::Mutex::new((0u64, 0u64)));
            let sink = total.clone();
            let reader = ParquetScanReader::new(
                Arc::new(Schema::new(fields)),
                names.iter().map(|n| n.to_string()).collect(),
                false,
                defaults(),
                splits.clone(),
                64,
                || Ok(()),
            )
            .unwrap()
            .with_filters(
                filters,
                Box::new(move |p| {
                    let mut t = sink.lock().unwrap();
                    t.0 += p.bytes_read;
                    t.1 += p.rows_read;
                    Ok(())
                }),
            );
            let rows: usize = reader.map(|b| b.unwrap().num_rows()).sum();
            let t = *total.lock().unwrap();
            (rows as u64, t)
        };
        let (rows, (bytes, reported_rows)) = read(vec![]);
        assert_eq!((rows, reported_rows), (3000, 3000));
        assert!(bytes > 0 && bytes <= size, "{bytes} of {size}");
        let f = ScanFilter { column: 0, op: FilterOp::Lt, values: vec![ScalarValue::Int64(Some(500))] };
        let (rows, (pruned_bytes, reported_rows)) = read(vec![f]);
        assert_eq!(rows, reported_rows);
        assert!(pruned_bytes > 0 && pruned_bytes < bytes, "{pruned_bytes} with two row groups pruned, {bytes} without");
    }

    /// A date before the switch in EXCEPTION mode fails the read whatever the filters would skip, as reading
    /// it does: pages and rows are skipped only in row groups whose statistics prove no such date.
    #[test]
    fn skipping_never_hides_a_rebase_error() {
        let dir = tempfile::tempdir().unwrap();
        let ancient = write_typed(dir.path(), 1000, 1000, 5, true);
        let filters = vec![ScanFilter { column: 0, op: FilterOp::Gt, values: vec![ScalarValue::Int64(Some(500))] }];
        for filter_rows in [true, false] {
            let err = read_filtered(ancient.clone(), filters.clone(), filter_rows).unwrap_err();
            assert!(err.to_string().contains("READ_ANCIENT_DATETIME"), "{err}");
        }
        let modern = write_typed(dir.path(), 1000, 1000, 5, false);
        let (rows, seen) = read_filtered(modern, filters, true).unwrap();
        assert_eq!(ids(&rows, 0), (501..1000).collect::<Vec<_>>());
        assert_eq!(seen, ScanPruning { row_groups: 0, pages: 10, rows: 501, ..Default::default() });
    }

    /// A row filter that does not pay — it keeps more than half of a row group's rows, or the rows it passes lie
    /// in short runs — is left out for the next row groups (Spark's filter above still drops their rows); a
    /// selective filter whose rows come in long runs keeps filtering.
    #[test]
    fn a_row_filter_that_does_not_pay_pauses() {
        use rand::{Rng, SeedableRng};
        let dir = tempfile::tempdir().unwrap();
        // 3000 rows in row groups of 300: `k` = (id / 50) % 4 (runs of 50), `r` random in 0..4.
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int32, false),
            Field::new("r", DataType::Int32, false),
        ]));
        let path = dir.path().join("runs.parquet");
        let props = WriterProperties::builder().set_max_row_group_row_count(Some(300)).build();
        let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), schema.clone(), Some(props)).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let k: Int32Array = (0..3000).map(|i| (i / 50) % 4).collect();
        let r: Int32Array = (0..3000).map(|_| rng.random_range(0..4)).collect();
        w.write(&RecordBatch::try_new(schema.clone(), vec![Arc::new(k.clone()), Arc::new(r.clone())]).unwrap())
            .unwrap();
        w.close().unwrap();
        let read = |filter: ScanFilter| -> usize {
            ParquetScanReader::new(
                schema.clone(),
                vec!["k".into(), "r".into()],
                false,
                defaults(),
                whole(&path),
                1024,
                || Ok(()),
            )
            .unwrap()
            .with_filters(vec![filter], Box::new(|_| Ok(())))
            .with_row_filter_pause(3)
            .map(|b| b.unwrap().num_rows())
            .sum()
        };
        let eq = |column, v| ScanFilter { column, op: FilterOp::Eq, values: vec![ScalarValue::Int32(Some(v))] };
        let matching = |a: &Int32Array, groups: &[usize], v: i32| -> usize {
            groups.iter().map(|g| a.values()[g * 300..(g + 1) * 300].iter().filter(|x| **x == v).count()).sum()
        };
        let all = |groups: &[usize]| groups.len() * 300;
        // Selective, in runs of 50: filtered in every row group.
        assert_eq!(read(eq(0, 0)), 750);
        // Selective but scattered: filtered in row groups 0, 4 and 8 only.
        assert_eq!(read(eq(1, 2)), matching(&r, &[0, 4, 8], 2) + all(&[1, 2, 3, 5, 6, 7, 9]));
        // Keeps three quarters: likewise.
        let most = ScanFilter { column: 0, op: FilterOp::Le, values: vec![ScalarValue::Int32(Some(2))] };
        let kept: usize = [0usize, 4, 8].iter().map(|g| 300 - matching(&k, &[*g], 3)).sum();
        assert_eq!(read(most), kept + all(&[1, 2, 3, 5, 6, 7, 9]));
    }
}
