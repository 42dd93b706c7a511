//! Ember's native engine: the proto plan contract turned into DataFusion execution plans with Spark's
//! semantics, running under Spark's memory manager. No JNI here: `native/jni` is the only crate that knows
//! about the JVM, and everything below is tested with plain `cargo test`.
pub mod defaults;
pub mod error;
pub mod execution;
pub mod expressions;
pub mod memory;
pub mod metrics;
pub mod operators;
pub mod planner;
pub mod spark_hash;
pub mod unsafe_row;

pub use ember_proto as proto;

#[cfg(test)]
mod layering_tests;
