//! Proto data types, fields and literals → Arrow / DataFusion.
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion_common::{Result, ScalarValue};
use ember_proto as pb;

use crate::error::plan_error;

pub fn to_arrow_type(t: &pb::DataType) -> Result<DataType> {
    use pb::TypeId;
    let id = TypeId::try_from(t.id).map_err(|_| plan_error(format!("unknown type id {}", t.id)))?;
    Ok(match id {
        TypeId::Null => DataType::Null,
        TypeId::Boolean => DataType::Boolean,
        TypeId::Int8 => DataType::Int8,
        TypeId::Int16 => DataType::Int16,
        TypeId::Int32 => DataType::Int32,
        TypeId::Int64 => DataType::Int64,
        TypeId::Float32 => DataType::Float32,
        TypeId::Float64 => DataType::Float64,
        TypeId::Decimal => {
            if !(1..=38).contains(&t.precision) || t.scale < 0 || t.scale > t.precision {
                return Err(plan_error(format!("invalid decimal({}, {})", t.precision, t.scale)));
            }
            DataType::Decimal128(t.precision as u8, t.scale as i8)
        }
        // Spark's strings are bytes: as `Binary` in a plan that only moves, compares and hashes them.
        TypeId::Utf8 if super::expr::strings_as_bytes() => DataType::Binary,
        TypeId::Utf8 => DataType::Utf8,
        TypeId::Binary => DataType::Binary,
        TypeId::Date => DataType::Date32,
        TypeId::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from(t.timezone.as_str()))),
        TypeId::TimestampNtz => DataType::Timestamp(TimeUnit::Microsecond, None),
        TypeId::Array => {
            let element =
                to_arrow_type(t.element.as_deref().ok_or_else(|| plan_error("array without an element type"))?)?;
            if matches!(element, DataType::List(_)) {
                return Err(plan_error("arrays of arrays are not supported"));
            }
            DataType::List(crate::expressions::functions::array::element_field(element, t.contains_null))
        }
        TypeId::TypeUnspecified => return Err(plan_error("data type not set")),
    })
}

pub fn required_type(t: &Option<pb::DataType>) -> Result<DataType> {
    to_arrow_type(t.as_ref().ok_or_else(|| plan_error("missing data type"))?)
}

pub fn to_arrow_schema(schema: &pb::Schema) -> Result<Schema> {
    let fields = schema
        .fields
        .iter()
        .map(|f| Ok(Field::new(&f.name, required_type(&f.r#type)?, f.nullable)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Schema::new(fields))
}

pub fn to_scalar(lit: &pb::Literal) -> Result<ScalarValue> {
    use pb::literal::Value;
    let dt = required_type(&lit.r#type)?;
    if lit.is_null {
        return ScalarValue::try_from(&dt);
    }
    let v = lit.value.as_ref().ok_or_else(|| plan_error("non-null literal without a value"))?;
    let long = || match v {
        Value::LongValue(l) => Ok(*l),
        _ => Err(plan_error(format!("literal of type {dt} needs long_value"))),
    };
    Ok(match &dt {
        DataType::Boolean => match v {
            Value::BoolValue(b) => ScalarValue::Boolean(Some(*b)),
            _ => return Err(plan_error("boolean literal needs bool_value")),
        },
        DataType::Int8 => {
            ScalarValue::Int8(Some(i8::try_from(long()?).map_err(|_| plan_error("byte literal out of range"))?))
        }
        DataType::Int16 => {
            ScalarValue::Int16(Some(i16::try_from(long()?).map_err(|_| plan_error("short literal out of range"))?))
        }
        DataType::Int32 => {
            ScalarValue::Int32(Some(i32::try_from(long()?).map_err(|_| plan_error("int literal out of range"))?))
        }
        DataType::Int64 => ScalarValue::Int64(Some(long()?)),
        DataType::Date32 => {
            ScalarValue::Date32(Some(i32::try_from(long()?).map_err(|_| plan_error("date literal out of range"))?))
        }
        DataType::Timestamp(_, tz) => ScalarValue::TimestampMicrosecond(Some(long()?), tz.clone()),
        DataType::Float32 => match v {
            Value::FloatValue(f) => ScalarValue::Float32(Some(*f)),
            _ => return Err(plan_error("float literal needs float_value")),
        },
        DataType::Float64 => match v {
            Value::DoubleValue(f) => ScalarValue::Float64(Some(*f)),
            _ => return Err(plan_error("double literal needs double_value")),
        },
        DataType::Decimal128(p, s) => match v {
            Value::DecimalValue(bytes) => {
                let unscaled = decimal_from_be_bytes(bytes)?;
                ScalarValue::Decimal128(Some(unscaled), *p, *s)
            }
            _ => return Err(plan_error("decimal literal needs decimal_value")),
        },
        DataType::Utf8 => match v {
            Value::StringValue(s) => ScalarValue::Utf8(Some(s.clone())),
            // Spark's bytes that are not UTF-8 (proto strings must be): only as bytes, in a plan carrying strings
            // as bytes.
            Value::BytesValue(_) => {
                return Err(plan_error(
                    "a string literal that is not valid UTF-8 needs a plan carrying strings as bytes \
                     (spark.ember.strings.asBytes.enabled)",
                ))
            }
            _ => return Err(plan_error("string literal needs string_value")),
        },
        DataType::Binary => match v {
            Value::BytesValue(b) => ScalarValue::Binary(Some(b.clone())),
            Value::StringValue(s) if lit.r#type.as_ref().is_some_and(|t| t.id == pb::TypeId::Utf8 as i32) => {
                ScalarValue::Binary(Some(s.as_bytes().to_vec()))
            }
            _ => return Err(plan_error("binary literal needs bytes_value")),
        },
        DataType::Null => ScalarValue::Null,
        DataType::List(field) => match v {
            Value::ArrayValue(a) => {
                let elements = a.elements.iter().map(to_scalar).collect::<Result<Vec<_>>>()?;
                let values = if elements.is_empty() {
                    arrow::array::new_empty_array(field.data_type())
                } else {
                    ScalarValue::iter_to_array(elements)?
                };
                if values.data_type() != field.data_type() || (!field.is_nullable() && values.null_count() > 0) {
                    return Err(plan_error(format!("array literal of {} for {field}", values.data_type())));
                }
                let offsets = arrow::buffer::OffsetBuffer::from_lengths([values.len()]);
                ScalarValue::List(Arc::new(arrow::array::ListArray::try_new(field.clone(), offsets, values, None)?))
            }
            _ => return Err(plan_error("array literal needs array_value")),
        },
        other => return Err(plan_error(format!("unsupported literal type {other}"))),
    })
}

/// A big-endian two's complement integer of 1..=16 bytes (Java's `BigInteger.toByteArray`).
pub fn decimal_from_be_bytes(bytes: &[u8]) -> Result<i128> {
    if bytes.is_empty() || bytes.len() > 16 {
        return Err(plan_error(format!("decimal literal of {} bytes", bytes.len())));
    }
    let fill = if bytes[0] & 0x80 != 0 { 0xFF } else { 0 };
    let mut buf = [fill; 16];
    buf[16 - bytes.len()..].copy_from_slice(bytes);
    Ok(i128::from_be_bytes(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_bytes_sign_extend() {
        assert_eq!(decimal_from_be_bytes(&[0x01, 0x00]).unwrap(), 256);
        assert_eq!(decimal_from_be_bytes(&[0xFF]).unwrap(), -1);
        assert_eq!(decimal_from_be_bytes(&[0xFF, 0x00]).unwrap(), -256);
        assert!(decimal_from_be_bytes(&[]).is_err());
        assert!(decimal_from_be_bytes(&[0; 17]).is_err());
    }

    #[test]
    fn bad_types_are_errors() {
        let t = pb::DataType { id: 999, ..Default::default() };
        assert!(to_arrow_type(&t).is_err());
        let t = pb::DataType { id: pb::TypeId::Decimal as i32, precision: 40, scale: 0, ..Default::default() };
        assert!(to_arrow_type(&t).is_err());
        let lit = pb::Literal {
            r#type: Some(pb::DataType { id: pb::TypeId::Int8 as i32, ..Default::default() }),
            is_null: false,
            value: Some(pb::literal::Value::LongValue(1000)),
        };
        assert!(to_scalar(&lit).is_err());
    }
}
