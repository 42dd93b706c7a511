//! The engine's integration tests, one binary (DataFusion is linked once): a module per operator or family,
//! sharing `common`. One module: `cargo test -p ember-engine --test engine prefix_window::`.
mod common;

mod aggregate_adaptive;
mod aggregate_radix;
mod arithmetic;
mod arithmetic_spark;
mod cast;
mod deep_expressions;
mod dynamic_filter;
mod first_error;
mod functions_spark;
mod memory_matrix;
mod plan_execution;
mod plan_replay;
mod prefix_window;
mod shuffle;
mod sort;
mod spark_types;
mod spilling_hash_join;
mod strings;
