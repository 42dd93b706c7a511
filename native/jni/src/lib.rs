//! libember: the only place that knows about the JVM.
//!
//! Every entry point of `org.ember.jni.NativeLib` runs inside `EnvUnowned::with_env`, which catches panics;
//! the [`ThrowEmberException`] policy turns any error or panic into a Java exception that carries the message
//! (and, for Spark error conditions, the error class and parameters, which the JVM side turns into Spark's own
//! exception). Nothing here unwinds into the JVM and nothing aborts it. Every `unsafe` block says why it is
//! sound in a `// SAFETY:` comment (clippy's `undocumented_unsafe_blocks` fails the lint otherwise).
#![deny(clippy::undocumented_unsafe_blocks)]
mod bridge;
mod calendar;
mod jvm_expressions;
mod logging;
mod memory;

pub use bridge::*;
