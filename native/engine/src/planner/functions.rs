//! `ScalarFunction` → a kernel by Spark's function name: the registry of Spark's built-in functions the engine
//! evaluates. Each entry checks the argument types Spark resolved and the return type; anything else (an
//! unknown name, other argument types) is a plan error, so the operator falls back with the reason.
use std::sync::Arc;

use std::f64::consts::{E, PI};

use arrow::datatypes::{DataType, Schema};
use datafusion_common::{Result, ScalarValue};
use datafusion_physical_expr::expressions::Literal;
use ember_proto as pb;
use pb::expr::Kind;

use super::expr::{create_expr, eval_mode, every_row, jdk_feature, partition_index, PhysicalExprRef};
use super::types::{required_type, to_scalar};
use crate::error::plan_error;
use crate::expressions::cast::FLOAT_TEXT_MIN_JDK;
use crate::expressions::functions::array::{
    comparable_element, ArrayExtremum, ArrayJoin, ArrayRemove, ArraySearch, ArraySet, CreateArray, ElementAt,
    RegexpExtractAll, SetOp, Size, Slice, SortArray, Split,
};
use crate::expressions::functions::binary::{Base64, LuhnCheck, Md5, UnBase64};
use crate::expressions::functions::case::{Case, CaseMap, InitCap};
use crate::expressions::functions::codec::{
    Charset, Decode, Encode, Quote, UrlDecode, UrlEncode, Utf8Op, Utf8Validity, CANNOT_DECODE_URL,
};
use crate::expressions::functions::datetime::{
    DateAdd, DateDiff, DateField, DateName, ExtractDate, LastDay, TruncDate, UnixDate,
};
use crate::expressions::functions::datetime_format::{DatetimeFormat, FormatTimestamp};
use crate::expressions::functions::math::{
    Abs, BinaryMath, BinaryMathFn, BitGet, BitOp, Bitwise, BitwiseNot, Conv, DoubleFn, Extremum, IsNaN, NaNvl, Pmod,
    Shift, ShiftOp, Transcendental, UnaryDouble, UnaryMath, WidthBucket, BIT_POSITION_RANGE,
};
use crate::expressions::functions::regex::{
    replacement, JavaRegex, Piece, RLike, RegexpExtract, RegexpInstr, RegexpReplace,
};
use crate::expressions::functions::rounding::{
    DecimalRounding, FormatNumber, Round, RoundDecimal, RoundMode, FORMAT_NUMBER_MAX_DIGITS,
};
use crate::expressions::functions::string_edit::{
    Elt, FindInSet, Levenshtein, Locate, Overlay, Pad, Repeat, Replace, Space, SubstringIndex, Translate, Trim,
    TrimSide,
};
use crate::expressions::functions::strings::{
    Affix, AffixMatch, Ascii, Chr, Length, LengthUnit, Like, Reverse, Substring,
};
use crate::expressions::functions::timestamp::{
    day_of_week_from_string, AddMonths, ConvertTimezone, ConvertTz, ExtractTime, IntegralToTimestamp, MakeDate,
    MonthsBetween, NextDay, TimeField, ToUnixTimestamp, TruncTimestamp, UnixTime,
};
use crate::expressions::functions::udf::UdfKernel;
use crate::expressions::functions::Kernel;
use crate::expressions::zone::SessionZone;
use crate::expressions::{FunctionExpr, Mode, QueryContextExpr};

/// Every function name the registry knows (Spark's names; aliases Spark resolves to the same expression
/// class carry that class's `prettyName`, which is what the JVM side sends).
pub const FUNCTIONS: &[&str] = &[
    "like",
    "rlike",
    "regexp",
    "regexp_like",
    "regexp_extract",
    "regexp_instr",
    "regexp_replace",
    "startswith",
    "endswith",
    "contains",
    "substring",
    "length",
    "octet_length",
    "bit_length",
    "year",
    "quarter",
    "month",
    "day",
    "dayofmonth",
    "dayofyear",
    "dayofweek",
    "weekday",
    "date_add",
    "date_sub",
    "datediff",
    "pmod",
    "bit_and",
    "bit_or",
    "bit_xor",
    "bit_not",
    "shiftleft",
    "shiftright",
    "shiftrightunsigned",
    "isnan",
    "nanvl",
    "sqrt",
    "signum",
    "greatest",
    "least",
    "ascii",
    "chr",
    "reverse",
    "weekofyear",
    "last_day",
    "trunc",
    "abs",
    "upper",
    "lower",
    "initcap",
    "trim",
    "ltrim",
    "rtrim",
    "lpad",
    "rpad",
    "replace",
    "translate",
    "instr",
    "locate",
    "concat",
    "concat_ws",
    "repeat",
    "levenshtein",
    "soundex",
    "substring_index",
    "hour",
    "minute",
    "second",
    "date_trunc",
    "from_utc_timestamp",
    "to_utc_timestamp",
    "unix_seconds",
    "unix_millis",
    "unix_micros",
    "unix_timestamp",
    "to_unix_timestamp",
    "timestamp_seconds",
    "timestamp_millis",
    "timestamp_micros",
    "add_months",
    "months_between",
    "next_day",
    "make_date",
    "cbrt",
    "exp",
    "expm1",
    "ln",
    "log2",
    "log10",
    "log1p",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "degrees",
    "radians",
    "rint",
    "atan2",
    "power",
    "hypot",
    "log",
    "floor",
    "ceil",
    "round",
    "bround",
    "factorial",
    "hex",
    "unhex",
    "bin",
    "width_bucket",
    "md5",
    "sha1",
    "sha2",
    "crc32",
    "unbase64",
    "bit_count",
    "bit_get",
    "getbit",
    "date_from_unix_date",
    "unix_date",
    "dayname",
    "monthname",
    "e",
    "pi",
    "space",
    "elt",
    "find_in_set",
    "overlay",
    "base64",
    "luhn_check",
    "conv",
    "url_encode",
    "url_decode",
    "quote",
    "is_valid_utf8",
    "make_valid_utf8",
    "validate_utf8",
    "try_validate_utf8",
    "encode",
    "decode",
];

pub fn scalar_function_expr(f: &pb::ScalarFunction, schema: &Schema) -> Result<PhysicalExprRef> {
    super::strings::refuse_text(&f.name, f.return_type.as_ref(), &f.args.iter().collect::<Vec<_>>())?;
    let return_type = required_type(&f.return_type)?;
    // Constants (Spark folds them; they reach the engine only when ConstantFolding is excluded).
    match (f.name.as_str(), f.args.is_empty(), &return_type) {
        ("e", true, DataType::Float64) => return Ok(Arc::new(Literal::new(ScalarValue::Float64(Some(E))))),
        ("pi", true, DataType::Float64) => return Ok(Arc::new(Literal::new(ScalarValue::Float64(Some(PI))))),
        _ => {}
    }
    if let Some(e) = nondeterministic(f, &return_type, schema)? {
        return Ok(e);
    }
    let mode = eval_mode(f.eval_mode)?;
    let args = f.args.iter().map(|a| create_expr(a, schema)).collect::<Result<Vec<_>>>()?;
    let types = args.iter().map(|a| a.data_type(schema)).collect::<Result<Vec<_>>>()?;
    let name = f.name.as_str();
    let unsupported = || {
        let t = types.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ");
        plan_error(format!("function {name}({t}) returning {return_type} is not supported natively"))
    };
    use DataType::*;
    // Arrays only reach the functions made for them (see `functions::array`).
    let list = |t: &DataType| matches!(t, List(_));
    if (types.iter().any(list) || list(&return_type)) && !ARRAY_FUNCTIONS.contains(&name) {
        return Err(unsupported());
    }
    let sig = (types.as_slice(), &return_type);
    let udf = |u| -> Result<Arc<dyn Kernel>> {
        match UdfKernel::new(u, &types, &return_type) {
            Some(k) => Ok(Arc::new(k)),
            None => Err(unsupported()),
        }
    };
    let kernel: Arc<dyn Kernel> = match name {
        "like" => match sig {
            ([Utf8, Utf8, Utf8], Boolean) => like_kernel(f)?,
            _ => return Err(unsupported()),
        },
        "rlike" | "regexp" | "regexp_like" => match sig {
            ([Utf8, Utf8], Boolean) => Arc::new(RLike(java_regex(f, 1)?)),
            _ => return Err(unsupported()),
        },
        "regexp_extract" => match sig {
            ([Utf8, Utf8, Int32], Utf8) => {
                let (regex, group) = regex_group(f)?;
                Arc::new(RegexpExtract(regex, group))
            }
            _ => return Err(unsupported()),
        },
        "regexp_instr" => match sig {
            ([Utf8, Utf8], Int32) => Arc::new(RegexpInstr(java_regex(f, 1)?)),
            _ => return Err(unsupported()),
        },
        "regexp_replace" => match sig {
            ([Utf8, Utf8, Utf8, Int32], Utf8) => regexp_replace_kernel(f)?,
            _ => return Err(unsupported()),
        },
        "startswith" | "endswith" | "contains" => match sig {
            ([Utf8, Utf8], Boolean) => Arc::new(AffixMatch(match name {
                "startswith" => Affix::StartsWith,
                "endswith" => Affix::EndsWith,
                _ => Affix::Contains,
            })),
            _ => return Err(unsupported()),
        },
        "substring" => match sig {
            ([Utf8, Int32, Int32], Utf8) => Arc::new(Substring),
            _ => return Err(unsupported()),
        },
        "length" | "octet_length" | "bit_length" => match sig {
            ([Utf8], Int32) => Arc::new(Length(match name {
                "length" => LengthUnit::Chars,
                "octet_length" => LengthUnit::Bytes,
                _ => LengthUnit::Bits,
            })),
            _ => return Err(unsupported()),
        },
        "year" | "quarter" | "month" | "day" | "dayofmonth" | "dayofyear" | "dayofweek" | "weekday" | "weekofyear" => {
            match sig {
                ([Date32], Int32) => Arc::new(ExtractDate(match name {
                    "year" => DateField::Year,
                    "quarter" => DateField::Quarter,
                    "month" => DateField::Month,
                    "day" | "dayofmonth" => DateField::DayOfMonth,
                    "dayofyear" => DateField::DayOfYear,
                    "dayofweek" => DateField::DayOfWeek,
                    "weekday" => DateField::WeekDay,
                    _ => DateField::WeekOfYear,
                })),
                _ => return Err(unsupported()),
            }
        }
        "date_add" | "date_sub" => match sig {
            ([Date32, Int8 | Int16 | Int32], Date32) => Arc::new(DateAdd { subtract: name == "date_sub" }),
            _ => return Err(unsupported()),
        },
        "datediff" => match sig {
            ([Date32, Date32], Int32) => Arc::new(DateDiff),
            _ => return Err(unsupported()),
        },
        "pmod" => match sig {
            ([l, r], rt) if l == r && l == rt && matches!(l, Int8 | Int16 | Int32 | Int64 | Float32 | Float64) => {
                if mode == Mode::Try {
                    return Err(plan_error("pmod has no TRY mode"));
                }
                Arc::new(Pmod { ansi: mode == Mode::Ansi })
            }
            _ => return Err(unsupported()),
        },
        "bit_and" | "bit_or" | "bit_xor" => match sig {
            ([l, r], rt) if l == r && l == rt && is_int(l) => Arc::new(Bitwise(match name {
                "bit_and" => BitOp::And,
                "bit_or" => BitOp::Or,
                _ => BitOp::Xor,
            })),
            _ => return Err(unsupported()),
        },
        "bit_not" => match sig {
            ([t], rt) if t == rt && is_int(t) => Arc::new(BitwiseNot),
            _ => return Err(unsupported()),
        },
        "shiftleft" | "shiftright" | "shiftrightunsigned" => match sig {
            ([l @ (Int32 | Int64), Int32], rt) if l == rt => Arc::new(Shift(match name {
                "shiftleft" => ShiftOp::Left,
                "shiftright" => ShiftOp::Right,
                _ => ShiftOp::RightUnsigned,
            })),
            _ => return Err(unsupported()),
        },
        "isnan" => match sig {
            ([Float32 | Float64], Boolean) => Arc::new(IsNaN),
            _ => return Err(unsupported()),
        },
        "nanvl" => match sig {
            ([l @ (Float32 | Float64), r], rt) if l == r && l == rt => Arc::new(NaNvl),
            _ => return Err(unsupported()),
        },
        "sqrt" | "signum" => match sig {
            ([Float64], Float64) => {
                Arc::new(UnaryDouble(if name == "sqrt" { DoubleFn::Sqrt } else { DoubleFn::Signum }))
            }
            _ => return Err(unsupported()),
        },
        "greatest" | "least" => match sig {
            (ts, rt)
                if ts.len() >= 2
                    && ts.iter().all(|t| t == rt)
                    && matches!(
                        rt,
                        Boolean | Int8 | Int16 | Int32 | Int64 | Decimal128(_, _) | Date32 | Utf8 | Binary
                    ) =>
            {
                Arc::new(Extremum { greatest: name == "greatest" })
            }
            _ => return Err(unsupported()),
        },
        "ascii" => match sig {
            ([Utf8], Int32) => Arc::new(Ascii),
            _ => return Err(unsupported()),
        },
        "chr" => match sig {
            ([Int64], Utf8) => Arc::new(Chr),
            _ => return Err(unsupported()),
        },
        "reverse" => match sig {
            ([Utf8], Utf8) => Arc::new(Reverse),
            _ => return Err(unsupported()),
        },
        "trunc" => match sig {
            ([Date32, Utf8], Date32) => Arc::new(TruncDate),
            _ => return Err(unsupported()),
        },
        "abs" => match sig {
            // A decimal's absolute value fits its own precision: Spark keeps the type and never overflows.
            ([t], rt)
                if t == rt && matches!(t, Int8 | Int16 | Int32 | Int64 | Float32 | Float64 | Decimal128(_, _)) =>
            {
                if mode == Mode::Try {
                    return Err(plan_error("abs has no TRY mode"));
                }
                Arc::new(Abs { ansi: mode == Mode::Ansi })
            }
            _ => return Err(unsupported()),
        },
        "last_day" => match sig {
            ([Date32], Date32) => Arc::new(LastDay),
            _ => return Err(unsupported()),
        },
        "upper" | "lower" => match sig {
            ([Utf8], Utf8) => Arc::new(CaseMap(if name == "upper" { Case::Upper } else { Case::Lower })),
            _ => return Err(unsupported()),
        },
        "initcap" => match sig {
            ([Utf8], Utf8) => Arc::new(InitCap),
            _ => return Err(unsupported()),
        },
        "trim" | "ltrim" | "rtrim" => match sig {
            ([Utf8] | [Utf8, Utf8], Utf8) => Arc::new(Trim(match name {
                "trim" => TrimSide::Both,
                "ltrim" => TrimSide::Left,
                _ => TrimSide::Right,
            })),
            _ => return Err(unsupported()),
        },
        "lpad" | "rpad" => match sig {
            ([Utf8, Int32, Utf8], Utf8) => Arc::new(Pad { left: name == "lpad" }),
            _ => return Err(unsupported()),
        },
        "replace" => match sig {
            ([Utf8, Utf8, Utf8], Utf8) => Arc::new(Replace),
            _ => return Err(unsupported()),
        },
        "translate" => match sig {
            ([Utf8, Utf8, Utf8], Utf8) => Arc::new(Translate),
            _ => return Err(unsupported()),
        },
        "instr" => match sig {
            ([Utf8, Utf8], Int32) => Arc::new(Locate { instr: true }),
            _ => return Err(unsupported()),
        },
        "locate" => match sig {
            ([Utf8, Utf8, Int32], Int32) => Arc::new(Locate { instr: false }),
            _ => return Err(unsupported()),
        },
        "repeat" => match sig {
            ([Utf8, Int32], Utf8) => Arc::new(Repeat),
            _ => return Err(unsupported()),
        },
        "substring_index" => match sig {
            ([Utf8, Utf8, Int32], Utf8) => Arc::new(SubstringIndex),
            _ => return Err(unsupported()),
        },
        "levenshtein" => match sig {
            ([Utf8, Utf8] | [Utf8, Utf8, Int32], Int32) => Arc::new(Levenshtein),
            _ => return Err(unsupported()),
        },
        "soundex" => match sig {
            ([Utf8], Utf8) => udf(datafusion_spark::function::string::soundex())?,
            _ => return Err(unsupported()),
        },
        "concat" => match sig {
            (ts, Utf8) if !ts.is_empty() && ts.iter().all(|t| *t == Utf8) => {
                udf(datafusion_spark::function::string::concat())?
            }
            _ => return Err(unsupported()),
        },
        "concat_ws" => match sig {
            (ts, Utf8) if !ts.is_empty() && ts.iter().all(|t| *t == Utf8) => {
                udf(datafusion_spark::function::string::concat_ws())?
            }
            _ => return Err(unsupported()),
        },
        "hour" | "minute" | "second" => match sig {
            ([Timestamp(_, Some(_))], Int32) => Arc::new(ExtractTime {
                field: match name {
                    "hour" => TimeField::Hour,
                    "minute" => TimeField::Minute,
                    _ => TimeField::Second,
                },
                zone: session_zone(f)?,
            }),
            _ => return Err(unsupported()),
        },
        "date_trunc" => match sig {
            ([Utf8, Timestamp(_, Some(_))], Timestamp(_, Some(_))) => {
                Arc::new(TruncTimestamp { zone: session_zone(f)? })
            }
            _ => return Err(unsupported()),
        },
        "convert_timezone" => match sig {
            ([Utf8, Utf8, Timestamp(_, None)], Timestamp(_, None)) => {
                let zone = |i| -> Result<Option<SessionZone>> {
                    match string_literal(f, i)? {
                        None => Err(plan_error("convert_timezone with a non-literal time zone")),
                        Some(None) => Ok(None),
                        Some(Some(z)) => SessionZone::parse(&z).map(Some).ok_or_else(|| {
                            plan_error(format!("convert_timezone: time zone '{z}' is not known natively"))
                        }),
                    }
                };
                Arc::new(ConvertTimezone { from: zone(0)?, to: zone(1)? })
            }
            _ => return Err(unsupported()),
        },
        "from_utc_timestamp" | "to_utc_timestamp" => match sig {
            ([Timestamp(_, Some(_)), Utf8], Timestamp(_, Some(_))) => {
                let zone = match string_literal(f, 1)? {
                    None => return Err(plan_error(format!("{name} with a non-literal time zone"))),
                    Some(None) => None,
                    Some(Some(z)) => Some(
                        SessionZone::parse(&z)
                            .ok_or_else(|| plan_error(format!("{name}: time zone '{z}' is not known natively")))?,
                    ),
                };
                Arc::new(ConvertTz { zone, to_utc: name == "to_utc_timestamp" })
            }
            _ => return Err(unsupported()),
        },
        "unix_seconds" | "unix_millis" | "unix_micros" => match sig {
            ([Timestamp(_, Some(_))], Int64) => Arc::new(UnixTime(match name {
                "unix_seconds" => 1_000_000,
                "unix_millis" => 1_000,
                _ => 1,
            })),
            _ => return Err(unsupported()),
        },
        "split" => match sig {
            ([Utf8, Utf8, Int32], List(_)) => {
                let regex = match literal_string(f, 1)? {
                    None => None,
                    Some(p) if p.is_empty() => Some(None),
                    Some(_) => {
                        let r = java_regex(f, 1)?.expect("a pattern");
                        if r.matches_empty {
                            return Err(plan_error("split with a pattern that can match the empty string"));
                        }
                        Some(Some(r))
                    }
                };
                Arc::new(Split { regex })
            }
            _ => return Err(unsupported()),
        },
        "size" | "cardinality" => match sig {
            ([List(_), Boolean], Int32) => Arc::new(Size {
                legacy_size_of_null: bool_literal(f, 1)?.ok_or_else(|| plan_error("size without its NULL rule"))?,
            }),
            _ => return Err(unsupported()),
        },
        "element_at" | "array_item" => match sig {
            ([List(e), Int32 | Int64], rt) if e.data_type() == rt => {
                if name == "element_at" && types[1] != Int32 {
                    return Err(unsupported());
                }
                Arc::new(ElementAt { one_based: name == "element_at", ansi: mode == Mode::Ansi })
            }
            _ => return Err(unsupported()),
        },
        "array_contains" | "array_position" => match sig {
            ([List(e), v], Boolean | Int64) if e.data_type() == v && comparable_element(v) => {
                let position = name == "array_position";
                if (return_type == Int64) != position {
                    return Err(unsupported());
                }
                Arc::new(ArraySearch { position })
            }
            _ => return Err(unsupported()),
        },
        "array_max" | "array_min" => match sig {
            ([List(e)], rt) if e.data_type() == rt && comparable_element(rt) => {
                Arc::new(ArrayExtremum { max: name == "array_max" })
            }
            _ => return Err(unsupported()),
        },
        "array_join" => match sig {
            ([List(e), Utf8], Utf8) | ([List(e), Utf8, Utf8], Utf8) if e.data_type() == &Utf8 => Arc::new(ArrayJoin),
            _ => return Err(unsupported()),
        },
        "array" => match sig {
            (ts, List(field)) if !ts.is_empty() && ts.iter().all(|t| t == field.data_type()) => {
                Arc::new(CreateArray { field: field.clone() })
            }
            _ => return Err(unsupported()),
        },
        "format_number" => match sig {
            ([Int8 | Int16 | Int32 | Int64 | Decimal128(_, _), Int32], Utf8) => {
                let digits = int_literal(f, 1)?;
                if digits.is_some_and(|d| d > FORMAT_NUMBER_MAX_DIGITS) {
                    return Err(plan_error(format!("format_number to more than {FORMAT_NUMBER_MAX_DIGITS} decimals")));
                }
                let scale = if let Decimal128(_, s) = &types[0] { *s } else { 0 };
                if scale < 0 {
                    return Err(unsupported());
                }
                Arc::new(FormatNumber { scale, digits })
            }
            _ => return Err(unsupported()),
        },
        "sort_array" => match sig {
            ([List(e), Boolean], List(f)) if comparable_element(e.data_type()) => {
                Arc::new(SortArray { field: f.clone() })
            }
            _ => return Err(unsupported()),
        },
        "array_remove" => match sig {
            ([List(e), v], List(f)) if e.data_type() == v && comparable_element(v) => {
                Arc::new(ArrayRemove { field: f.clone() })
            }
            _ => return Err(unsupported()),
        },
        "slice" => match sig {
            ([List(_), Int32, Int32], List(f)) => Arc::new(Slice { field: f.clone() }),
            _ => return Err(unsupported()),
        },
        "array_distinct" | "array_union" | "array_intersect" | "array_except" | "arrays_overlap" => {
            let op = match name {
                "array_distinct" => SetOp::Distinct,
                "array_union" => SetOp::Union,
                "array_intersect" => SetOp::Intersect,
                "array_except" => SetOp::Except,
                _ => SetOp::Overlap,
            };
            // Spark hashes floats with its own -0.0 / NaN rules: those stay in Spark.
            let hashed = |t: &DataType| comparable_element(t) && !matches!(t, Float32 | Float64);
            let field = match (types.as_slice(), &return_type, op) {
                ([List(e)], List(f), SetOp::Distinct) if hashed(e.data_type()) => Some(f.clone()),
                ([List(a), List(b)], List(f), _) if a.data_type() == b.data_type() && hashed(a.data_type()) => {
                    Some(f.clone())
                }
                ([List(a), List(b)], Boolean, SetOp::Overlap)
                    if a.data_type() == b.data_type() && hashed(a.data_type()) =>
                {
                    None
                }
                _ => return Err(unsupported()),
            };
            Arc::new(ArraySet { op, field })
        }
        "regexp_extract_all" => match sig {
            ([Utf8, Utf8, Int32], List(_)) => {
                let (regex, group) = regex_group(f)?;
                if regex.as_ref().is_some_and(|r| r.matches_empty) {
                    return Err(plan_error("regexp_extract_all with a pattern that can match the empty string"));
                }
                Arc::new(RegexpExtractAll { regex, group })
            }
            _ => return Err(unsupported()),
        },
        "date_format" | "from_unixtime" => match sig {
            ([Timestamp(_, _) | Int64, Utf8], Utf8) => {
                let from_seconds = name == "from_unixtime";
                if from_seconds != (types[0] == Int64) {
                    return Err(unsupported());
                }
                let format = literal_string(f, 1)?
                    .map(|p| {
                        DatetimeFormat::compile(&p).map_err(|why| plan_error(format!("{name} pattern {p:?}: {why}")))
                    })
                    .transpose()?;
                Arc::new(FormatTimestamp { format, zone: session_zone(f)?, from_seconds })
            }
            _ => return Err(unsupported()),
        },
        "unix_timestamp" | "to_unix_timestamp" => match sig {
            ([Timestamp(_, _)], Int64) => Arc::new(ToUnixTimestamp { zone: SessionZone::Fixed(0) }),
            ([Date32], Int64) => Arc::new(ToUnixTimestamp { zone: session_zone(f)? }),
            _ => return Err(unsupported()),
        },
        "timestamp_seconds" | "timestamp_millis" | "timestamp_micros" => match sig {
            ([t], Timestamp(_, tz @ Some(_))) if is_int(t) => Arc::new(IntegralToTimestamp {
                micros_per_unit: match name {
                    "timestamp_seconds" => 1_000_000,
                    "timestamp_millis" => 1_000,
                    _ => 1,
                },
                tz: tz.clone(),
            }),
            _ => return Err(unsupported()),
        },
        "add_months" => match sig {
            ([Date32, Int32], Date32) => Arc::new(AddMonths),
            _ => return Err(unsupported()),
        },
        "months_between" => match sig {
            ([Timestamp(_, Some(_)), Timestamp(_, Some(_)), Boolean], Float64) => {
                Arc::new(MonthsBetween { zone: session_zone(f)? })
            }
            _ => return Err(unsupported()),
        },
        "next_day" => match sig {
            ([Date32, Utf8], Date32) => {
                if mode != Mode::Legacy {
                    // Spark raises SparkIllegalArgumentException for an unknown day name: only a valid literal
                    // (no row can fail) runs natively.
                    match string_literal(f, 1)? {
                        Some(Some(d)) if day_of_week_from_string(&d).is_some() => {}
                        Some(None) => {}
                        _ => return Err(plan_error("next_day under ANSI needs a valid literal day of week")),
                    }
                }
                Arc::new(NextDay)
            }
            _ => return Err(unsupported()),
        },
        "make_date" => match sig {
            ([Int32, Int32, Int32], Date32) => Arc::new(MakeDate { ansi: mode == Mode::Ansi }),
            _ => return Err(unsupported()),
        },
        _ if Transcendental::by_name(name).is_some() => match (sig, Transcendental::by_name(name)) {
            _ if VIA_MATH.contains(&name) && jdk_feature() > MATH_IS_FDLIBM_MAX_JDK => {
                return Err(via_math_error(name));
            }
            (([Float64], Float64), Some(f)) => Arc::new(UnaryMath(f)),
            _ => return Err(unsupported()),
        },
        "atan2" | "power" | "hypot" | "log" => match sig {
            _ if VIA_MATH.contains(&name) && jdk_feature() > MATH_IS_FDLIBM_MAX_JDK => {
                return Err(via_math_error(name));
            }
            ([Float64, Float64], Float64) => Arc::new(BinaryMath(match name {
                "atan2" => BinaryMathFn::Atan2,
                "power" => BinaryMathFn::Power,
                "hypot" => BinaryMathFn::Hypot,
                _ => BinaryMathFn::Log,
            })),
            _ => return Err(unsupported()),
        },
        "floor" | "ceil" => match sig {
            // datafusion-spark's, golden-checked: Java's saturating (long) cast of Math.floor/ceil, NaN → 0.
            ([Float64 | Int64], Int64) if name == "floor" => udf(datafusion_spark::function::math::floor())?,
            ([Float64 | Int64], Int64) => udf(datafusion_spark::function::math::ceil())?,
            // Spark: the type itself at scale 0, else DECIMAL(p - s + 1, 0) (bounded at 38).
            ([Decimal128(p, s)], Decimal128(rp, 0))
                if *s >= 0 && *rp == (*p as i32 - *s as i32 + 1).min(38) as u8 || *s == 0 && rp == p =>
            {
                Arc::new(RoundDecimal {
                    how: if name == "ceil" { DecimalRounding::Ceil } else { DecimalRounding::Floor },
                    scale: Some(0),
                    in_scale: *s,
                    out_precision: *rp,
                    out_scale: 0,
                })
            }
            _ => return Err(unsupported()),
        },
        "round" | "bround" => match sig {
            ([t, Int32], rt) if t == rt && matches!(t, Int8 | Int16 | Int32 | Int64 | Float32 | Float64) => {
                if mode == Mode::Try {
                    return Err(plan_error(format!("{name} has no TRY mode")));
                }
                // Spark rounds a float or double through `Double.toString`'s digits, which JDK 19 changed; the
                // kernel reproduces JDK 19+'s.
                let jdk = jdk_feature();
                if matches!(t, Float32 | Float64) && jdk != 0 && jdk < FLOAT_TEXT_MIN_JDK {
                    return Err(plan_error(format!(
                        "{name} of {t} follows Java's Double.toString, whose output changed in JDK \
                         {FLOAT_TEXT_MIN_JDK}; this JVM is {jdk}"
                    )));
                }
                Arc::new(Round {
                    mode: if name == "round" { RoundMode::HalfUp } else { RoundMode::HalfEven },
                    scale: int_literal(f, 1)?,
                    ansi: mode == Mode::Ansi,
                })
            }
            ([Decimal128(p, s), Int32], Decimal128(rp, rs)) if *s >= 0 => {
                let scale = int_literal(f, 1)?;
                // Spark's RoundBase result type: one more integral digit, min(s, scale) fractional digits, or
                // scale 0 with at least 1 - scale digits for a negative scale; bounded at 38.
                let (p, s) = (*p as i32, *s as i32);
                let expected = match scale {
                    Some(k) if k < 0 => ((p - s + 1).max(1 - k).min(38), 0),
                    Some(k) => ((p - s + 1 + s.min(k)).min(38), s.min(k)),
                    None => (*rp as i32, *rs as i32),
                };
                // Only a DECIMAL(38, 0) can round (to a negative scale) past 38 digits, where Spark raises its
                // own precision error: left to Spark.
                if expected != (*rp as i32, *rs as i32) || matches!(scale, Some(k) if k < 0 && p - s + 1 > 38) {
                    return Err(unsupported());
                }
                Arc::new(RoundDecimal {
                    how: if name == "round" { DecimalRounding::HalfUp } else { DecimalRounding::HalfEven },
                    scale,
                    in_scale: s as i8,
                    out_precision: *rp,
                    out_scale: *rs,
                })
            }
            _ => return Err(unsupported()),
        },
        // datafusion-spark's, golden-checked (NULL outside 0..=20; Math.rint's ties to even).
        "factorial" => match sig {
            ([Int32], Int64) => udf(datafusion_spark::function::math::factorial())?,
            _ => return Err(unsupported()),
        },
        "rint" => match sig {
            ([Float64], Float64) => udf(datafusion_spark::function::math::rint())?,
            _ => return Err(unsupported()),
        },
        // datafusion-spark's, golden-checked: Spark's digits (upper case, two's complement for negatives,
        // NULL for a non-hex or non-ASCII character in unhex, an odd length padded with a leading 0).
        "hex" | "unhex" | "bin" => match sig {
            ([Int64 | Utf8 | Binary], Utf8) if name == "hex" => udf(datafusion_spark::function::math::hex())?,
            ([Utf8], Binary) if name == "unhex" => udf(datafusion_spark::function::math::unhex())?,
            ([Int64], Utf8) if name == "bin" => udf(datafusion_spark::function::math::bin())?,
            _ => return Err(unsupported()),
        },
        "width_bucket" => match sig {
            ([Float64, Float64, Float64, Int64], Int64) => Arc::new(WidthBucket),
            _ => return Err(unsupported()),
        },
        "md5" => match sig {
            ([Binary], Utf8) => Arc::new(Md5),
            _ => return Err(unsupported()),
        },
        // datafusion-spark's, golden-checked: lower-case hex digests (sha2: 0 is 256, other bit lengths NULL) and
        // the unsigned CRC-32 as a BIGINT.
        "sha1" => match sig {
            ([Binary], Utf8) => udf(datafusion_spark::function::hash::sha1())?,
            _ => return Err(unsupported()),
        },
        "sha2" => match sig {
            ([Binary, Int32], Utf8) => udf(datafusion_spark::function::hash::sha2())?,
            _ => return Err(unsupported()),
        },
        "crc32" => match sig {
            ([Binary], Int64) => udf(datafusion_spark::function::hash::crc32())?,
            _ => return Err(unsupported()),
        },
        "unbase64" => match sig {
            ([Utf8], Binary) => Arc::new(UnBase64),
            _ => return Err(unsupported()),
        },
        // datafusion-spark's, golden-checked: Long.bitCount of the sign-extended value, 1/0 for a boolean.
        "bit_count" => match sig {
            ([Boolean | Int8 | Int16 | Int32 | Int64], Int32) => udf(datafusion_spark::function::bitwise::bit_count())?,
            _ => return Err(unsupported()),
        },
        "bit_get" | "getbit" => match sig {
            ([t, Int32], Int8) if is_int(t) => Arc::new(BitGet { name: name.to_string() }),
            _ => return Err(unsupported()),
        },
        "unix_date" => match sig {
            ([Date32], Int32) => Arc::new(UnixDate { to_date: false }),
            _ => return Err(unsupported()),
        },
        "date_from_unix_date" => match sig {
            ([Int32], Date32) => Arc::new(UnixDate { to_date: true }),
            _ => return Err(unsupported()),
        },
        "dayname" | "monthname" => match sig {
            ([Date32], Utf8) => Arc::new(DateName { month: name == "monthname" }),
            _ => return Err(unsupported()),
        },
        "space" => match sig {
            ([Int32], Utf8) => Arc::new(Space),
            _ => return Err(unsupported()),
        },
        "elt" => match sig {
            ([Int32, rest @ ..], Utf8) if !rest.is_empty() && rest.iter().all(|t| *t == Utf8) => {
                if mode == Mode::Try {
                    return Err(plan_error("elt has no TRY mode"));
                }
                Arc::new(Elt { ansi: mode == Mode::Ansi })
            }
            _ => return Err(unsupported()),
        },
        "find_in_set" => match sig {
            ([Utf8, Utf8], Int32) => Arc::new(FindInSet),
            _ => return Err(unsupported()),
        },
        "overlay" => match sig {
            ([Utf8, Utf8, Int32, Int32], Utf8) => Arc::new(Overlay),
            _ => return Err(unsupported()),
        },
        // Spark's StaticInvoke of Base64.encode(bytes, chunkBase64), the flag as the second argument.
        "base64" => match sig {
            ([Binary, Boolean], Utf8) => Arc::new(Base64),
            _ => return Err(unsupported()),
        },
        // Spark's StaticInvoke of ExpressionImplUtils.isLuhnNumber.
        "luhn_check" => match sig {
            ([Utf8], Boolean) => Arc::new(LuhnCheck),
            _ => return Err(unsupported()),
        },
        // Spark's StaticInvokes of UrlCodec.encode / decode(str, failOnError) and ExpressionImplUtils.quote.
        "url_encode" => match sig {
            ([Utf8], Utf8) => Arc::new(UrlEncode),
            _ => return Err(unsupported()),
        },
        "url_decode" => match sig {
            ([Utf8, Boolean], Utf8) => Arc::new(UrlDecode),
            _ => return Err(unsupported()),
        },
        "quote" => match sig {
            ([Utf8], Utf8) => Arc::new(Quote),
            _ => return Err(unsupported()),
        },
        "is_valid_utf8" => match sig {
            ([Utf8], Boolean) => Arc::new(Utf8Validity(Utf8Op::IsValid)),
            _ => return Err(unsupported()),
        },
        "make_valid_utf8" | "validate_utf8" | "try_validate_utf8" => match sig {
            ([Utf8], Utf8) => {
                Arc::new(Utf8Validity(if name == "make_valid_utf8" { Utf8Op::MakeValid } else { Utf8Op::Validate }))
            }
            _ => return Err(unsupported()),
        },
        // Spark's StaticInvokes of Encode.encode / StringDecode.decode(x, charset, legacyCharsets,
        // legacyErrorAction): a literal charset Ember knows, Java's REPORT error action.
        "encode" | "decode" => match sig {
            ([Utf8 | Binary, Utf8, Boolean, Boolean], Utf8 | Binary) => {
                let (charset_text, charset) = match string_literal(f, 1)? {
                    Some(Some(t)) => {
                        let c = Charset::by_name(&t);
                        (t, c)
                    }
                    _ => return Err(plan_error(format!("{name} with a charset that is not a literal"))),
                };
                let Some(charset) = charset else {
                    return Err(plan_error(format!("{name} to or from charset {charset_text}")));
                };
                if bool_literal(f, 3)? != Some(false) {
                    return Err(plan_error(format!("{name} with spark.sql.legacy.codingErrorAction (REPLACE)")));
                }
                match (name, sig.0[0].clone(), sig.1.clone()) {
                    ("encode", Utf8, Binary) => Arc::new(Encode { charset, charset_text }),
                    ("decode", Binary, Utf8) => Arc::new(Decode { charset, charset_text }),
                    _ => return Err(unsupported()),
                }
            }
            _ => return Err(unsupported()),
        },
        "conv" => match sig {
            ([Utf8, Int32, Int32], Utf8) => {
                if mode == Mode::Try {
                    return Err(plan_error("conv has no TRY mode"));
                }
                Arc::new(Conv { ansi: mode == Mode::Ansi })
            }
            _ => return Err(unsupported()),
        },
        _ => return Err(plan_error(format!("function {name} is not supported natively"))),
    };
    let e: PhysicalExprRef = Arc::new(FunctionExpr::new(name, args, return_type, kernel));
    // Error classes Spark raises from these functions without a query context.
    let without: &[&str] = match name {
        "bit_get" | "getbit" => &[BIT_POSITION_RANGE],
        "url_decode" => &[CANNOT_DECODE_URL],
        _ => &[],
    };
    Ok(QueryContextExpr::wrap(e, f.query_context, without))
}

/// The function's session time zone (`ScalarFunction.timezone`), or the plan error naming it.
fn session_zone(f: &pb::ScalarFunction) -> Result<SessionZone> {
    SessionZone::parse(&f.timezone)
        .ok_or_else(|| plan_error(format!("{}: time zone '{}' is not known natively", f.name, f.timezone)))
}

/// Argument `i` when it is a boolean literal (`None` for NULL or not a literal).
fn bool_literal(f: &pb::ScalarFunction, i: usize) -> Result<Option<bool>> {
    match f.args.get(i).and_then(|a| a.kind.as_ref()) {
        Some(Kind::Literal(l)) => match to_scalar(l)? {
            datafusion_common::ScalarValue::Boolean(v) => Ok(v),
            _ => Ok(None),
        },
        _ => Ok(None),
    }
}

/// Argument `i` when it is a string literal (`Some(None)` for NULL); `None` when it is not a literal.
fn string_literal(f: &pb::ScalarFunction, i: usize) -> Result<Option<Option<String>>> {
    match f.args.get(i).and_then(|a| a.kind.as_ref()) {
        Some(Kind::Literal(l)) => match to_scalar(l)? {
            datafusion_common::ScalarValue::Utf8(v) => Ok(Some(v)),
            _ => Ok(None),
        },
        _ => Ok(None),
    }
}

/// Functions Spark computes with `java.lang.Math`, which delegates to `StrictMath` (fdlibm, what the kernels
/// reproduce) up to JDK [`MATH_IS_FDLIBM_MAX_JDK`]; later JDKs add JIT intrinsics for some (`tanh` in 24, `cbrt` in
/// 25) whose last bit may differ, so on those JVMs they stay in Spark.
const VIA_MATH: &[&str] = &["cbrt", "asin", "acos", "atan", "sinh", "cosh", "tanh", "atan2", "hypot"];
const MATH_IS_FDLIBM_MAX_JDK: u32 = 21;

fn via_math_error(name: &str) -> datafusion_common::DataFusionError {
    plan_error(format!("{name} on JDK {} (java.lang.Math may use a JIT intrinsic there, not fdlibm)", jdk_feature()))
}

fn is_int(t: &DataType) -> bool {
    matches!(t, DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64)
}

/// Argument `i` as an INT literal (`round`'s scale, which Spark requires to be foldable); `None` for NULL.
/// The functions that make or read arrays.
const ARRAY_FUNCTIONS: &[&str] = &[
    "split",
    "size",
    "cardinality",
    "element_at",
    "array_item",
    "array_contains",
    "array_position",
    "array_max",
    "array_min",
    "array_join",
    "array",
    "sort_array",
    "array_remove",
    "slice",
    "array_distinct",
    "array_union",
    "array_intersect",
    "array_except",
    "arrays_overlap",
    "regexp_extract_all",
];

/// The longest `randstr` the engine makes (a batch's strings are allocated at once).
const RANDSTR_MAX_LENGTH: i32 = 4096;

/// Spark's nondeterministic functions (see `expressions::nondeterministic`), planned only where Spark evaluates
/// them on every row; None for any other function.
fn nondeterministic(
    f: &pb::ScalarFunction,
    return_type: &DataType,
    schema: &Schema,
) -> Result<Option<PhysicalExprRef>> {
    use crate::expressions::nondeterministic::{Nondeterministic as N, NondeterministicExpr};
    // The seed Spark resolved (RDG.seed: the literal as a long, NULL as 0), sent last as a BIGINT literal.
    let seed = || match f.args.last().and_then(|a| a.kind.as_ref()) {
        Some(Kind::Literal(l)) => match to_scalar(l)? {
            ScalarValue::Int64(v) => Ok(v.unwrap_or(0)),
            other => Err(plan_error(format!("{} with seed {other:?}", f.name))),
        },
        _ => Err(plan_error(format!("{} without a literal seed", f.name))),
    };
    let kind = match (f.name.as_str(), return_type, f.args.len()) {
        ("spark_partition_id", DataType::Int32, 0) => N::PartitionId,
        ("monotonically_increasing_id", DataType::Int64, 0) => N::MonotonicallyIncreasingId,
        ("rand" | "random", DataType::Float64, 1) => N::Rand { seed: seed()? },
        ("randn", DataType::Float64, 1) => N::Randn { seed: seed()? },
        ("uuid", DataType::Utf8, 1) => N::Uuid { seed: seed()? },
        ("randstr", DataType::Utf8, 2) => match int_literal(f, 0)? {
            // Longer strings stay in Spark: the engine allocates a batch's strings at once.
            Some(length) if (0..=RANDSTR_MAX_LENGTH).contains(&length) => N::RandStr { length, seed: seed()? },
            Some(length) if length > RANDSTR_MAX_LENGTH => {
                return Err(plan_error(format!("randstr longer than {RANDSTR_MAX_LENGTH} characters")))
            }
            _ => return Err(plan_error("randstr of a NULL or negative length (Spark raises the error)")),
        },
        ("shuffle", DataType::List(_), 2) => N::Shuffle { seed: seed()? },
        _ => return Ok(None),
    };
    if !every_row() {
        return Err(plan_error(format!(
            "{} where Spark may skip rows (only a projection's expression, or its first arguments, runs natively)",
            f.name
        )));
    }
    let e = NondeterministicExpr::new(kind, partition_index());
    Ok(Some(Arc::new(match kind {
        N::Shuffle { .. } => {
            let array = create_expr(&f.args[0], schema)?;
            if &array.data_type(schema)? != return_type {
                return Err(plan_error("shuffle of another type than it returns"));
            }
            e.with_child(array)
        }
        _ => e,
    })))
}

fn int_literal(f: &pb::ScalarFunction, i: usize) -> Result<Option<i32>> {
    match f.args.get(i).and_then(|a| a.kind.as_ref()) {
        Some(Kind::Literal(l)) => match to_scalar(l)? {
            datafusion_common::ScalarValue::Int32(v) => Ok(v),
            other => Err(plan_error(format!("{} argument {i} is {other:?}", f.name))),
        },
        _ => Err(plan_error(format!("{} with a non-literal argument {i}", f.name))),
    }
}

/// Argument `i`, which must be a string literal; `None` for NULL.
fn literal_string(f: &pb::ScalarFunction, i: usize) -> Result<Option<String>> {
    match f.args.get(i).and_then(|a| a.kind.as_ref()) {
        Some(Kind::Literal(l)) => match to_scalar(l)? {
            ScalarValue::Utf8(v) => Ok(v),
            other => Err(plan_error(format!("{} argument {i} is {other:?}", f.name))),
        },
        _ => Err(plan_error(format!("{} with a non-literal argument {i}", f.name))),
    }
}

/// Argument `i`, a literal Java pattern, translated (`None`: NULL); a pattern not translated exactly is a plan
/// error with the construct named.
fn java_regex(f: &pb::ScalarFunction, i: usize) -> Result<Option<Arc<JavaRegex>>> {
    match literal_string(f, i)? {
        None => Ok(None),
        Some(p) => {
            JavaRegex::compile(&p).map(|r| Some(Arc::new(r))).map_err(|e| plan_error(format!("{}: {e}", f.name)))
        }
    }
}

/// `regexp_extract` / `regexp_extract_all`'s literal pattern (argument 1; None for NULL) and group index
/// (argument 2), which must name a group (Spark raises the error otherwise) not inside a repeated group.
fn regex_group(f: &pb::ScalarFunction) -> Result<(Option<Arc<JavaRegex>>, usize)> {
    let name = &f.name;
    let regex = java_regex(f, 1)?;
    let idx = int_literal(f, 2)?.ok_or_else(|| plan_error(format!("{name} with a NULL index")))?;
    if let Some(r) = &regex {
        if idx < 0 || idx as usize > r.groups() {
            return Err(plan_error(format!(
                "{name} of group {idx} of a pattern with {} groups (Spark raises the error)",
                r.groups()
            )));
        }
        if idx > 0 && r.groups_repeated {
            return Err(plan_error(format!("{name} of a group inside a repeated group")));
        }
    }
    Ok((regex, idx.max(0) as usize))
}

/// `regexp_replace(str, pattern, replacement, 1)`: literal pattern and replacement, position 1 only.
fn regexp_replace_kernel(f: &pb::ScalarFunction) -> Result<Arc<dyn Kernel>> {
    if int_literal(f, 3)? != Some(1) {
        return Err(plan_error("regexp_replace from a position other than 1"));
    }
    let regex = java_regex(f, 1)?;
    let rep = literal_string(f, 2)?;
    let (Some(r), Some(rep)) = (&regex, rep) else {
        return Ok(Arc::new(RegexpReplace { regex: None, pieces: Vec::new() }));
    };
    if r.matches_empty {
        return Err(plan_error("regexp_replace with a pattern that can match the empty string"));
    }
    let pieces =
        replacement(&rep, &r.names).map_err(|e| plan_error(format!("regexp_replace: {e} (Spark raises the error)")))?;
    if r.groups_repeated && pieces.iter().any(|p| matches!(p, Piece::Group(g) if *g > 0)) {
        return Err(plan_error("regexp_replace referring to a group inside a repeated group"));
    }
    Ok(Arc::new(RegexpReplace { regex, pieces }))
}

/// The pattern and escape character are literals (Spark's Like keeps the escape outside its children; a
/// non-literal pattern is refused on the JVM side).
fn like_kernel(f: &pb::ScalarFunction) -> Result<Arc<dyn Kernel>> {
    let literal = |i: usize| -> Result<Option<String>> {
        match f.args.get(i).and_then(|a| a.kind.as_ref()) {
            Some(Kind::Literal(l)) => match to_scalar(l)? {
                datafusion_common::ScalarValue::Utf8(v) => Ok(v),
                other => Err(plan_error(format!("LIKE argument {i} is {other:?}"))),
            },
            _ => Err(plan_error("LIKE with a non-literal pattern is not supported natively")),
        }
    };
    let pattern = literal(1)?;
    let escape = literal(2)?.ok_or_else(|| plan_error("LIKE without an escape character"))?;
    let mut chars = escape.chars();
    let (Some(esc), None) = (chars.next(), chars.next()) else {
        return Err(plan_error(format!("LIKE escape '{escape}' is not one character")));
    };
    Ok(Arc::new(Like::compile(pattern.as_deref(), esc)?))
}
