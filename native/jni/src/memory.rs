//! The production [`MemoryBroker`]: every native reservation is asked of the task's JVM `MemoryConsumer`
//! (`org.apache.spark.sql.ember.memory.NativeMemoryConsumer`, OFF_HEAP) and so of Spark's `TaskMemoryManager`,
//! which may grant fewer bytes than asked (the pool then refuses the reservation and the operator spills).
use datafusion_common::Result;
use ember_engine::error::plan_error;
use ember_engine::memory::MemoryBroker;
use ember_engine::operators::spilling_hash_join::BroadcastMemory;
use jni::objects::JObject;
use jni::refs::Global;
use jni::{jni_sig, jni_str, JValue, JavaVM};

use crate::bridge::call_source;

pub struct JvmBroker {
    consumer: Global<JObject<'static>>,
}

impl JvmBroker {
    pub fn new(consumer: Global<JObject<'static>>) -> Self {
        Self { consumer }
    }
}

impl std::fmt::Debug for JvmBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JvmBroker")
    }
}

impl MemoryBroker for JvmBroker {
    fn acquire(&self, bytes: usize) -> Result<usize> {
        let granted = JavaVM::singleton()
            .and_then(|vm| {
                vm.attach_current_thread(|env| {
                    env.call_method(
                        &self.consumer,
                        jni_str!("acquire"),
                        jni_sig!("(J)J"),
                        &[JValue::Long(bytes as i64)],
                    )?
                    .j()
                })
            })
            .map_err(|e| plan_error(format!("asking Spark for {bytes} bytes failed: {e}")))?;
        Ok(granted.max(0) as usize)
    }

    fn release(&self, bytes: usize) {
        let result = JavaVM::singleton().and_then(|vm| {
            vm.attach_current_thread(|env| {
                env.call_method(&self.consumer, jni_str!("release"), jni_sig!("(J)V"), &[JValue::Long(bytes as i64)])
                    .map(|_| ())
            })
        });
        if let Err(e) = result {
            log::error!("returning {bytes} bytes to Spark failed: {e}");
        }
    }
}

/// The production [`BroadcastMemory`]: a JVM `SharedBuildMemory`, Spark's off-heap storage memory, for the hash
/// tables an executor's tasks share. It holds no reference to the broadcast value, which must stay collectable.
pub struct JvmBroadcastMemory {
    memory: Global<JObject<'static>>,
}

impl JvmBroadcastMemory {
    pub fn new(memory: Global<JObject<'static>>) -> Self {
        Self { memory }
    }
}

impl BroadcastMemory for JvmBroadcastMemory {
    fn acquire(&self, bytes: usize) -> bool {
        // A refusal by exception is a refusal.
        let granted = call_source("asking Spark's storage memory failed", |env| {
            env.call_method(&self.memory, jni_str!("acquire"), jni_sig!("(J)Z"), &[JValue::Long(bytes as i64)])?.z()
        });
        granted.unwrap_or_else(|e| {
            log::warn!("asking Spark's storage memory for {bytes} bytes failed: {e}");
            false
        })
    }

    fn release(&self, bytes: usize) {
        let result = call_source("returning Spark's storage memory failed", |env| {
            env.call_method(&self.memory, jni_str!("release"), jni_sig!("(J)V"), &[JValue::Long(bytes as i64)])
                .map(|_| ())
        });
        if let Err(e) = result {
            log::error!("returning {bytes} bytes to Spark's storage memory failed: {e}");
        }
    }
}
