//! Arrow types from the type names of the golden tables Spark generates (`dev/golden/generate.py`): Spark's
//! `simpleString` (`int`, `decimal(10,2)`), with `dec(p,s)` for decimals, `ts` for a timestamp in `zone` and
//! `ntz` for a timestamp without one. Shared by the integration tests and, through `#[path]`, by the cast's unit
//! tests inside the crate.
use std::sync::Arc;

use arrow::datatypes::{DataType, TimeUnit};

pub fn spark_type(name: &str, zone: &str) -> DataType {
    let decimal = name.strip_prefix("decimal(").or_else(|| name.strip_prefix("dec("));
    if let Some((p, s)) = decimal.and_then(|r| r.strip_suffix(')')).and_then(|ps| ps.split_once(',')) {
        // `dec(2,-0)`: a scale of "-0" is 0.
        return DataType::Decimal128(p.parse().unwrap(), s.trim_start_matches('-').parse().unwrap());
    }
    match name {
        "boolean" => DataType::Boolean,
        "tinyint" => DataType::Int8,
        "smallint" => DataType::Int16,
        "int" => DataType::Int32,
        "bigint" => DataType::Int64,
        "float" => DataType::Float32,
        "double" => DataType::Float64,
        "string" => DataType::Utf8,
        "binary" => DataType::Binary,
        "date" => DataType::Date32,
        "ts" => DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from(zone))),
        "ntz" => DataType::Timestamp(TimeUnit::Microsecond, None),
        other => panic!("unknown type name {other}"),
    }
}
