//! Errors that must reach the user as Spark's own exceptions.
//!
//! Spark-compatible expressions raise a [`SparkError`] wrapped in `DataFusionError::External`; the JNI bridge
//! finds it anywhere in the error chain and throws the matching Spark exception (same error class, same message
//! parameters) instead of a generic one. Any other error becomes a plain exception with its message.
use std::fmt;

use datafusion_common::DataFusionError;

/// The Java exception type Spark uses for an error class (what `QueryExecutionErrors` would throw).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SparkExceptionKind {
    /// `SparkArithmeticException`: overflow, division by zero, decimal out of range.
    Arithmetic,
    /// `SparkNumberFormatException`: invalid string → number casts.
    NumberFormat,
    /// `SparkDateTimeException`: invalid string → date/timestamp casts, datetime overflow.
    DateTime,
    /// `SparkRuntimeException`: everything else with an error class (e.g. invalid string → boolean).
    Runtime,
    /// `SparkException` with the native error as its cause: file read errors (`FAILED_READ_FILE.*`).
    Spark,
    /// `SparkUpgradeException`: behaviour that changed across Spark versions (ancient dates in legacy files).
    Upgrade,
    /// `SparkIllegalArgumentException`: an invalid argument value (`bit_get`'s position).
    IllegalArgument,
    /// `SparkArrayIndexOutOfBoundsException`: an index out of bounds (`elt` under ANSI).
    ArrayIndex,
}

impl SparkExceptionKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            SparkExceptionKind::Arithmetic => "arithmetic",
            SparkExceptionKind::NumberFormat => "numberFormat",
            SparkExceptionKind::DateTime => "dateTime",
            SparkExceptionKind::Runtime => "runtime",
            SparkExceptionKind::Spark => "spark",
            SparkExceptionKind::Upgrade => "upgrade",
            SparkExceptionKind::IllegalArgument => "illegalArgument",
            SparkExceptionKind::ArrayIndex => "arrayIndex",
        }
    }
}

/// A Spark error condition with its message parameters, exactly as Spark's error-conditions.json names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SparkError {
    pub kind: SparkExceptionKind,
    pub error_class: String,
    pub params: Vec<(String, String)>,
    /// The id of the Spark expression's query context (the SQL fragment or DataFrame call site Spark prints
    /// under the message), as the JVM side put it in the plan; 0: none. Set only where Spark passes one.
    pub query_context: i32,
    /// The underlying error's message, for kinds whose Spark exception has a cause ([`SparkExceptionKind::Spark`]).
    pub cause: Option<String>,
    /// The cause as a Spark condition of its own, where Spark's cause is one.
    pub cause_error: Option<Box<SparkError>>,
}

/// The query context id of Spark's empty origin (`Origin().context`: no SQL text, no position), which Spark
/// attaches where an expression it built itself fails.
pub const EMPTY_QUERY_CONTEXT: i32 = -1;

pub const ANSI_CONFIG: &str = "\"spark.sql.ansi.enabled\"";

impl SparkError {
    pub fn new(kind: SparkExceptionKind, error_class: &str, params: &[(&str, String)]) -> Self {
        Self {
            kind,
            error_class: error_class.to_string(),
            params: params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            query_context: 0,
            cause: None,
            cause_error: None,
        }
    }

    /// `FAILED_READ_FILE.NO_HINT`: Spark's wrapper of any error while reading a file (`FileScanRDD`), with the
    /// file as Spark names it and the native error as the cause.
    pub fn failed_read_file(path: &str, cause: impl fmt::Display) -> Self {
        let mut e = Self::new(SparkExceptionKind::Spark, "FAILED_READ_FILE.NO_HINT", &[("path", path.to_string())]);
        e.cause = Some(cause.to_string());
        e
    }

    /// `FAILED_READ_FILE.NO_HINT` whose cause is Spark condition `cause` (as Spark's `FileScanRDD` wraps the
    /// reader's own Spark exception).
    pub fn failed_read_file_with(path: &str, cause: SparkError) -> Self {
        let mut e = Self::failed_read_file(path, &cause);
        e.cause_error = Some(Box::new(cause));
        e
    }

    /// Spark's `foundDuplicateFieldInCaseInsensitiveModeError` (`_LEGACY_ERROR_TEMP_2093`): `required` matches
    /// several file columns (`matched`, as Spark prints them: `[a, A]`) when case is ignored.
    pub fn duplicate_field_in_case_insensitive_mode(required: &str, matched: &str) -> Self {
        Self::new(
            SparkExceptionKind::Runtime,
            "_LEGACY_ERROR_TEMP_2093",
            &[("requiredFieldName", required.to_string()), ("matchedOrcFields", matched.to_string())],
        )
    }

    /// `FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH`: a Parquet column that cannot be read as the Spark
    /// type asked for (`column` as Spark prints it, `[name]`; the Spark type's `catalogString`; the Parquet
    /// physical type).
    pub fn parquet_column_data_type_mismatch(path: &str, column: &str, expected: &str, actual: &str) -> Self {
        let mut e = Self::new(
            SparkExceptionKind::Spark,
            "FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH",
            &[
                ("path", path.to_string()),
                ("column", column.to_string()),
                ("expectedType", expected.to_string()),
                ("actualType", actual.to_string()),
            ],
        );
        e.cause = Some(format!(
            "Parquet column cannot be converted in file {path}. Column: {column}, Expected: {expected}, Found: {actual}"
        ));
        e
    }

    /// `INCONSISTENT_BEHAVIOR_CROSS_VERSION.READ_ANCIENT_DATETIME` (`DataSourceUtils.newRebaseExceptionInRead`):
    /// a date or timestamp before the calendar switch in a file that does not say which calendar wrote it, read
    /// in EXCEPTION mode. `int96`: the INT96 flavour (its own config and option).
    pub fn parquet_read_ancient_datetime(int96: bool) -> Self {
        let (format, config, option) = if int96 {
            ("Parquet INT96", "spark.sql.parquet.int96RebaseModeInRead", "int96RebaseMode")
        } else {
            ("Parquet", "spark.sql.parquet.datetimeRebaseModeInRead", "datetimeRebaseMode")
        };
        Self::new(
            SparkExceptionKind::Upgrade,
            "INCONSISTENT_BEHAVIOR_CROSS_VERSION.READ_ANCIENT_DATETIME",
            &[("format", format.to_string()), ("config", format!("\"{config}\"")), ("option", format!("\"{option}\""))],
        )
    }

    pub fn with_query_context(mut self, query_context: i32) -> Self {
        self.query_context = query_context;
        self
    }

    /// `ARITHMETIC_OVERFLOW`, e.g. message "long overflow" (what Java's Math.addExact says).
    pub fn arithmetic_overflow(message: &str, alternative: &str) -> Self {
        Self::new(
            SparkExceptionKind::Arithmetic,
            "ARITHMETIC_OVERFLOW",
            &[
                ("message", message.to_string()),
                ("alternative", alternative.to_string()),
                ("config", ANSI_CONFIG.to_string()),
            ],
        )
    }

    /// Spark's error for an integral SUM (aggregate or window) that overflows under ANSI: the `Add` inside `Sum`
    /// has no origin of its own, so Spark attaches the empty context ([`EMPTY_QUERY_CONTEXT`]).
    pub fn long_sum_overflow() -> Self {
        Self::arithmetic_overflow("long overflow", " Use 'try_add' to tolerate overflow and return NULL instead.")
            .with_query_context(EMPTY_QUERY_CONTEXT)
    }

    /// `DIVIDE_BY_ZERO`.
    pub fn divide_by_zero() -> Self {
        Self::new(SparkExceptionKind::Arithmetic, "DIVIDE_BY_ZERO", &[("config", ANSI_CONFIG.to_string())])
    }

    /// `BINARY_ARITHMETIC_OVERFLOW`: Spark's error for TINYINT/SMALLINT `+ - *` overflow under ANSI.
    /// Values are Spark's SMALLINT literals (`100S`, also for TINYINT operands), `function_name` is quoted
    /// (`` `try_add` ``).
    pub fn binary_arithmetic_overflow(value1: &str, symbol: &str, value2: &str, function_name: &str) -> Self {
        Self::new(
            SparkExceptionKind::Arithmetic,
            "BINARY_ARITHMETIC_OVERFLOW",
            &[
                ("value1", value1.to_string()),
                ("symbol", symbol.to_string()),
                ("value2", value2.to_string()),
                ("functionName", function_name.to_string()),
            ],
        )
    }

    /// `REMAINDER_BY_ZERO`: Spark's `%` with a zero divisor under ANSI.
    pub fn remainder_by_zero() -> Self {
        Self::new(SparkExceptionKind::Arithmetic, "REMAINDER_BY_ZERO", &[("config", ANSI_CONFIG.to_string())])
    }

    /// `NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION`: a decimal result that does not fit its precision.
    pub fn numeric_value_out_of_range(value: &str, precision: u8, scale: i8) -> Self {
        Self::new(
            SparkExceptionKind::Arithmetic,
            "NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION",
            &[
                ("value", value.to_string()),
                ("precision", precision.to_string()),
                ("scale", scale.to_string()),
                ("config", ANSI_CONFIG.to_string()),
            ],
        )
    }

    /// `NUMERIC_OUT_OF_SUPPORTED_RANGE`: a string whose value has more than 38 integral digits, cast to DECIMAL.
    pub fn numeric_out_of_supported_range(value: &str) -> Self {
        Self::new(SparkExceptionKind::Arithmetic, "NUMERIC_OUT_OF_SUPPORTED_RANGE", &[("value", value.to_string())])
    }

    /// `CAST_OVERFLOW`: a numeric value that does not fit the target type of a cast.
    /// `value` is Spark's SQL literal form (e.g. `128L`, `1.0E10D`); types are Spark's SQL type names.
    pub fn cast_overflow(value: &str, source_type: &str, target_type: &str) -> Self {
        Self::new(
            SparkExceptionKind::Arithmetic,
            "CAST_OVERFLOW",
            &[
                ("value", value.to_string()),
                ("sourceType", format!("\"{source_type}\"")),
                ("targetType", format!("\"{target_type}\"")),
                ("ansiConfig", ANSI_CONFIG.to_string()),
            ],
        )
    }

    /// `CAST_INVALID_INPUT`: a string that does not parse as the cast's target type.
    pub fn cast_invalid_input(kind: SparkExceptionKind, value: &str, source_type: &str, target_type: &str) -> Self {
        Self::new(
            kind,
            "CAST_INVALID_INPUT",
            &[
                ("expression", format!("'{value}'")),
                ("sourceType", format!("\"{source_type}\"")),
                ("targetType", format!("\"{target_type}\"")),
                ("ansiConfig", ANSI_CONFIG.to_string()),
            ],
        )
    }

    pub fn into_datafusion(self) -> DataFusionError {
        DataFusionError::External(Box::new(self))
    }
}

impl fmt::Display for SparkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}]", self.error_class)?;
        for (k, v) in &self.params {
            write!(f, " {k}={v}")?;
        }
        if let Some(cause) = &self.cause {
            write!(f, ": {cause}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SparkError {}

/// Finds a [`SparkError`] anywhere in a DataFusion error chain (DataFusion wraps errors in context,
/// `Shared` and `ArrowError::ExternalError` layers as they cross operators and streams).
pub fn find_spark_error(err: &DataFusionError) -> Option<&SparkError> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(spark) = e.downcast_ref::<SparkError>() {
            return Some(spark);
        }
        if let Some(DataFusionError::External(inner)) = e.downcast_ref::<DataFusionError>() {
            if let Some(spark) = inner.downcast_ref::<SparkError>() {
                return Some(spark);
            }
        }
        source = e.source();
    }
    None
}

/// Gives a Spark error raised while evaluating an expression that expression's query context, as Spark's own
/// expression would (`getContextOrNull`), unless an inner expression already did or Spark raises the error class
/// without one (`without`, e.g. `CAST_OVERFLOW`). Other errors pass unchanged.
pub fn with_query_context(err: DataFusionError, query_context: i32, without: &[&str]) -> DataFusionError {
    if query_context == 0 {
        return err;
    }
    match err {
        DataFusionError::External(inner) => match inner.downcast::<SparkError>() {
            Ok(mut spark) => {
                if spark.query_context == 0 && !without.contains(&spark.error_class.as_str()) {
                    spark.query_context = query_context;
                }
                DataFusionError::External(spark)
            }
            Err(other) => DataFusionError::External(other),
        },
        other => other,
    }
}

/// Shorthand for a plan the decoder cannot accept: a malformed or unsupported proto.
pub fn plan_error(msg: impl Into<String>) -> DataFusionError {
    DataFusionError::Plan(format!("Ember: {}", msg.into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion_common::arrow::error::ArrowError;
    use std::sync::Arc;

    #[test]
    fn finds_spark_error_through_wrappers() {
        let err = SparkError::divide_by_zero().into_datafusion();
        assert_eq!(find_spark_error(&err).unwrap().error_class, "DIVIDE_BY_ZERO");

        let ctx = err.context("while sorting");
        assert_eq!(find_spark_error(&ctx).unwrap().error_class, "DIVIDE_BY_ZERO");

        let shared = DataFusionError::Shared(Arc::new(SparkError::divide_by_zero().into_datafusion()));
        assert!(find_spark_error(&shared).is_some());

        let arrow = DataFusionError::ArrowError(
            Box::new(ArrowError::ExternalError(Box::new(SparkError::divide_by_zero()))),
            None,
        );
        assert!(find_spark_error(&arrow).is_some());

        assert!(find_spark_error(&DataFusionError::Internal("x".into())).is_none());
    }
}
