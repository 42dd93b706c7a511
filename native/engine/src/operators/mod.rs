//! Ember's own execution operators (DataFusion `ExecutionPlan`s). Each operator is a module; larger ones are
//! folders in DataFusion's manner (`mod.rs` explains the algorithm, `exec.rs`, `stream.rs`, ...).
pub mod input;
pub mod prefix_window;

pub use input::InputExec;
pub use prefix_window::PrefixWindowExec;
