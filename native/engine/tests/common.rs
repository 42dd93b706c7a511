//! Builders for proto plans and in-memory inputs, shared by the engine's integration tests.
#![allow(dead_code)]
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, SchemaRef, TimeUnit};
use arrow::record_batch::RecordBatchIterator;
use ember_engine::operators::input::BatchReader;
use ember_engine::proto as pb;

pub fn pb_type(dt: &DataType) -> pb::DataType {
    use pb::TypeId;
    let (id, precision, scale, timezone) = match dt {
        DataType::Null => (TypeId::Null, 0, 0, String::new()),
        DataType::Boolean => (TypeId::Boolean, 0, 0, String::new()),
        DataType::Int8 => (TypeId::Int8, 0, 0, String::new()),
        DataType::Int16 => (TypeId::Int16, 0, 0, String::new()),
        DataType::Int32 => (TypeId::Int32, 0, 0, String::new()),
        DataType::Int64 => (TypeId::Int64, 0, 0, String::new()),
        DataType::Float32 => (TypeId::Float32, 0, 0, String::new()),
        DataType::Float64 => (TypeId::Float64, 0, 0, String::new()),
        DataType::Decimal128(p, s) => (TypeId::Decimal, *p as i32, *s as i32, String::new()),
        DataType::Utf8 => (TypeId::Utf8, 0, 0, String::new()),
        DataType::Binary => (TypeId::Binary, 0, 0, String::new()),
        DataType::Date32 => (TypeId::Date, 0, 0, String::new()),
        DataType::Timestamp(TimeUnit::Microsecond, Some(tz)) => (TypeId::Timestamp, 0, 0, tz.to_string()),
        DataType::Timestamp(TimeUnit::Microsecond, None) => (TypeId::TimestampNtz, 0, 0, String::new()),
        other => panic!("no proto type for {other}"),
    };
    pb::DataType { id: id as i32, precision, scale, timezone }
}

pub fn pb_schema(schema: &SchemaRef) -> pb::Schema {
    pb::Schema {
        fields: schema
            .fields()
            .iter()
            .map(|f| pb::Field {
                name: f.name().clone(),
                r#type: Some(pb_type(f.data_type())),
                nullable: f.is_nullable(),
            })
            .collect(),
    }
}

pub fn col(index: u32, dt: &DataType) -> pb::Expr {
    pb::Expr { kind: Some(pb::expr::Kind::Column(pb::ColumnRef { index, r#type: Some(pb_type(dt)), nullable: true })) }
}

pub fn lit_long(v: i64) -> pb::Expr {
    pb::Expr {
        kind: Some(pb::expr::Kind::Literal(pb::Literal {
            r#type: Some(pb_type(&DataType::Int64)),
            is_null: false,
            value: Some(pb::literal::Value::LongValue(v)),
        })),
    }
}

pub fn cmp(op: pb::CmpOp, l: pb::Expr, r: pb::Expr) -> pb::Expr {
    pb::Expr {
        kind: Some(pb::expr::Kind::Comparison(Box::new(pb::Comparison {
            op: op as i32,
            left: Some(Box::new(l)),
            right: Some(Box::new(r)),
        }))),
    }
}

pub fn op(id: u32, kind: pb::operator::Kind, children: Vec<pb::Operator>) -> pb::Operator {
    pb::Operator { id, children, kind: Some(kind) }
}

pub fn input(index: u32, schema: &SchemaRef) -> pb::Operator {
    op(
        100 + index,
        pb::operator::Kind::Input(pb::Input { input_index: index, schema: Some(pb_schema(schema)) }),
        vec![],
    )
}

pub fn plan(root: pb::Operator, output: &SchemaRef) -> pb::Plan {
    pb::Plan {
        root: Some(root),
        config: Some(pb::ExecConfig { batch_size: 1024, sort_spill_reservation_bytes: 1 << 20, ..Default::default() }),
        output_schema: Some(pb_schema(output)),
    }
}

pub fn reader(batches: Vec<RecordBatch>, schema: SchemaRef) -> BatchReader {
    Box::new(RecordBatchIterator::new(batches.into_iter().map(Ok), schema))
}

pub fn arc<T>(t: T) -> Arc<T> {
    Arc::new(t)
}
