//! The production [`CalendarRebase`]: Spark's `RebaseDateTime` on the JVM (through
//! `org.apache.spark.sql.ember.execution.CalendarRebase`) for the LEGACY Parquet timestamps its tables do not
//! cover, called on the task's thread with one batch's such values.
use ember_engine::planner::parquet_scan::CalendarRebase;
use jni::objects::JClass;
use jni::refs::Global;
use jni::{jni_sig, jni_str, JValue};

use crate::bridge::call_source;

pub struct JvmCalendar {
    class: Global<JClass<'static>>,
}

impl JvmCalendar {
    pub fn new(class: Global<JClass<'static>>) -> Self {
        Self { class }
    }
}

impl CalendarRebase for JvmCalendar {
    fn rebase_micros(&self, zone: &str, micros: &mut [i64]) -> Result<(), String> {
        call_source("rebasing legacy timestamps with Spark's calendar failed", |env| {
            let zone = env.new_string(zone)?;
            let values = env.new_long_array(micros.len())?;
            values.set_region(env, 0, micros)?;
            env.call_static_method(
                &self.class,
                jni_str!("rebaseMicros"),
                jni_sig!("(Ljava/lang/String;[J)V"),
                &[JValue::Object(&zone), JValue::Object(&values)],
            )?;
            values.get_region(env, 0, micros)
        })
        .map_err(|e| e.to_string())
    }
}
