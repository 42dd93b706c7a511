//! The native methods of `org.ember.jni.NativeLib`. Plans live behind opaque `long` handles owned by the JVM
//! side (`NativePlanIterator`), which closes them exactly once, on completion, failure or task kill.
use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, StructArray};
use arrow::ffi::{to_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use arrow::record_batch::RecordBatch;
use datafusion_common::DataFusionError;
use ember_engine::error::find_spark_error;
use ember_engine::execution::NativePlan;
use ember_engine::operators::input::{BatchReader, CheckedStrings};
use ember_engine::operators::range_source::RangeReader;
use ember_engine::operators::spilling_hash_join::SharedBuilds;
use ember_engine::operators::{CachedBatchReader, ShuffleBlockReader};
use ember_engine::planner::spilling_hash_join::ScanSlot;
use ember_engine::proto::InputKind;
use ember_engine::unsafe_row::UnsafeRowReader;
use jni::errors::{Error as JniError, ErrorPolicy};
use jni::objects::{JByteArray, JClass, JLongArray, JObject, JObjectArray, JString};
use jni::refs::Global;
use jni::sys::jlong;
use jni::{jni_sig, jni_str, Env, EnvUnowned, JValue, JavaVM};
use prost::Message;

use crate::calendar::JvmCalendar;
use crate::jvm_expressions::JvmExpressions;
use crate::logging;
use crate::memory::{JvmBroadcastMemory, JvmBroker};

/// Why a native call failed.
#[derive(Debug)]
pub enum BridgeError {
    Jni(JniError),
    Engine(DataFusionError),
    Invalid(String),
}

impl From<JniError> for BridgeError {
    fn from(e: JniError) -> Self {
        BridgeError::Jni(e)
    }
}

impl From<DataFusionError> for BridgeError {
    fn from(e: DataFusionError) -> Self {
        BridgeError::Engine(e)
    }
}

impl std::fmt::Display for BridgeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BridgeError::Jni(e) => write!(f, "JNI: {e}"),
            BridgeError::Engine(e) => write!(f, "{e}"),
            BridgeError::Invalid(m) => f.write_str(m),
        }
    }
}

type BridgeResult<T> = Result<T, BridgeError>;

/// Error policy of every entry point: a pending Java exception propagates as is; a Spark error condition
/// becomes `org.ember.jni.EmberSparkError` (kind, error class, parameters, query context id); anything else, and any panic,
/// becomes `org.ember.jni.EmberNativeException` with the message.
pub struct ThrowEmberException;

fn throw_native(env: &mut Env<'_>, message: &str) -> jni::errors::Result<()> {
    let msg = jni::strings::JNIString::from(message);
    match env.throw_new(jni_str!("org/ember/jni/EmberNativeException"), &msg) {
        Ok(()) | Err(JniError::JavaException) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The proto form of `err`, its cause condition included.
fn spark_error_proto(err: &ember_engine::error::SparkError) -> ember_engine::proto::SparkError {
    use ember_engine::error::SparkExceptionKind as K;
    use ember_engine::proto as pb;
    let kind = match err.kind {
        K::Runtime => pb::SparkExceptionKind::Runtime,
        K::Arithmetic => pb::SparkExceptionKind::Arithmetic,
        K::NumberFormat => pb::SparkExceptionKind::NumberFormat,
        K::DateTime => pb::SparkExceptionKind::DateTime,
        K::Spark => pb::SparkExceptionKind::Spark,
        K::Upgrade => pb::SparkExceptionKind::Upgrade,
        K::IllegalArgument => pb::SparkExceptionKind::IllegalArgument,
        K::ArrayIndex => pb::SparkExceptionKind::ArrayIndex,
    };
    pb::SparkError {
        kind: kind as i32,
        error_class: err.error_class.clone(),
        parameters: err
            .params
            .iter()
            .map(|(name, value)| pb::MessageParameter { name: name.clone(), value: value.clone() })
            .collect(),
        query_context: err.query_context,
        cause: err.cause.clone().unwrap_or_default(),
        cause_error: err.cause_error.as_deref().map(|c| Box::new(spark_error_proto(c))),
    }
}

/// Throws `EmberSparkError` carrying the condition as a proto `SparkError` (kind, class, parameters, query
/// context, cause): the JVM rethrows it as the exception Spark itself would throw.
fn throw_spark(env: &mut Env<'_>, err: &ember_engine::error::SparkError) -> jni::errors::Result<()> {
    let message = spark_error_proto(err);
    let bytes = env.byte_array_from_slice(&message.encode_to_vec())?;
    let exc =
        env.new_object(jni_str!("org/ember/jni/EmberSparkError"), jni_sig!("([B)V"), &[JValue::Object(&bytes)])?;
    let exc = jni::objects::JThrowable::cast_local(env, exc)?;
    match env.throw(exc) {
        Ok(()) | Err(JniError::JavaException) => Ok(()),
        Err(e) => Err(e),
    }
}

impl<T: Default> ErrorPolicy<T, BridgeError> for ThrowEmberException {
    type Captures<'unowned_env_local: 'native_method, 'native_method> = ();

    fn on_error<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _cap: &mut Self::Captures<'unowned_env_local, 'native_method>,
        err: BridgeError,
    ) -> jni::errors::Result<T> {
        if env.exception_check() {
            return Ok(T::default());
        }
        match &err {
            BridgeError::Engine(e) => match find_spark_error(e) {
                Some(spark) => throw_spark(env, spark)?,
                None => throw_native(env, &e.to_string())?,
            },
            other => throw_native(env, &other.to_string())?,
        }
        Ok(T::default())
    }

    fn on_panic<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _cap: &mut Self::Captures<'unowned_env_local, 'native_method>,
        payload: Box<dyn std::any::Any + Send + 'static>,
    ) -> jni::errors::Result<T> {
        let msg = if let Some(s) = payload.downcast_ref::<&'static str>() {
            s.to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "non-string panic payload".to_string()
        };
        if env.exception_check() {
            env.exception_clear();
        }
        throw_native(env, &format!("native panic: {msg}"))?;
        Ok(T::default())
    }
}

/// The plan and what it needs alive while it runs.
struct PlanHandle {
    plan: NativePlan,
    /// `nextRowsInto`'s rows, kept between batches so that its capacity is reused.
    rows: Vec<u8>,
    /// `rows` holds a batch the JVM's buffer was too small for: the next call writes it.
    rows_pending: bool,
    /// The rows of the current output batch not yet written by `nextRowsInto`.
    rows_rest: Option<RecordBatch>,
    /// `nextRowsInto` writes about this many bytes of rows per call at most (0: a whole batch per call).
    row_batch_bytes: usize,
}

fn handle<'a>(ptr: jlong) -> BridgeResult<&'a mut PlanHandle> {
    if ptr == 0 {
        return Err(BridgeError::Invalid("native plan used after close".into()));
    }
    // SAFETY: a non-null handle is a `Box<PlanHandle>` leaked by `createPlan` (`Box::into_raw`) and not yet freed:
    // the JVM side (`NativePlanIterator`) uses it from one thread at a time and closes it once, after its last use.
    Ok(unsafe { &mut *(ptr as *mut PlanHandle) })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_org_ember_jni_NativeLib_initLogging<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    level: JString<'l>,
    config_file: JString<'l>,
) {
    env.with_env(|_env| -> BridgeResult<()> {
        let level = level.to_string();
        let file = config_file.to_string();
        logging::init(&level, &file).map_err(BridgeError::Invalid)
    })
    .resolve::<ThrowEmberException>()
}

/// Builds a native plan (`plan`: a proto `Plan`, the same for every task) for one task (`task`: a proto
/// `TaskSettings`, the executor's spill dirs and the task's ids) over the task's inputs with memory from `consumer`.
/// Input `i` is what the kind of the plan's Input leaf `i` says: an exported `ArrowArrayStream` at address
/// `input_streams[i]` (whose ownership moves here, `row_sources[i]` null), or the object `row_sources[i]`: an
/// `UnsafeRowSource` (`int nextRows()` packs the Spark child's next `UnsafeRow`s into `packed`, -1 at the end,
/// decoded here), a `ShuffleBlockSource` or `BroadcastBlockSource` (the same calls, Arrow IPC blocks), a `RangeSource` (a slice of
/// `spark.range` generated here), a `ParquetSource` (the task's Parquet file splits, read here). Returns the plan
/// handle.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_ember_jni_NativeLib_createPlan<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    plan: JByteArray<'l>,
    task: JByteArray<'l>,
    input_streams: JLongArray<'l>,
    row_sources: JObjectArray<'l>,
    consumer: JObject<'l>,
) -> jlong {
    env.with_env(|env| -> BridgeResult<jlong> {
        let bytes = env.convert_byte_array(&plan)?;
        let n = input_streams.len(env)?;
        let mut addrs = vec![0i64; n];
        input_streams.get_region(env, 0, &mut addrs)?;
        if row_sources.len(env)? != n {
            return Err(BridgeError::Invalid("one row source (or null) per input stream expected".into()));
        }
        let proto = ember_engine::proto::Plan::decode(bytes.as_slice())
            .map_err(|e| BridgeError::Invalid(format!("undecodable plan: {e}")))?;
        let task = env.convert_byte_array(&task)?;
        let task = ember_engine::proto::TaskSettings::decode(task.as_slice())
            .map_err(|e| BridgeError::Invalid(format!("undecodable task settings: {e}")))?;
        let strings_as_bytes = ember_engine::planner::strings::as_bytes(&proto);
        let schemas = ember_engine::planner::input_schemas(&proto, strings_as_bytes)?;
        let kinds = input_kinds(&proto);
        let batch_size = ember_engine::defaults::batch_size(proto.config.as_ref().map_or(0, |c| c.batch_size));
        let mut inputs: Vec<BatchReader> = Vec::with_capacity(n);
        let mut shared = HashMap::new();
        let mut scans = HashMap::new();
        for (i, addr) in addrs.into_iter().enumerate() {
            let kind = kinds
                .iter()
                .find(|(idx, _)| *idx == i)
                .map(|(_, k)| *k)
                .ok_or_else(|| BridgeError::Invalid(format!("no input #{i} in the plan")))?;
            let kind = InputKind::try_from(kind)
                .map_err(|_| BridgeError::Invalid(format!("input #{i} of unknown kind {kind}")))?;
            let source = row_sources.get_element(env, i)?;
            if kind == InputKind::ArrowStream {
                if !source.is_null() || addr == 0 {
                    return Err(BridgeError::Invalid(format!("input #{i} is an Arrow stream, but none was given")));
                }
                // SAFETY: `addr` (checked non-null) is an `ArrowArrayStream` the JVM exported
                // (`Data.exportArrayStream`) for this input and hands over: `from_raw` moves it out, leaving the
                // JVM's struct released, so it is read and released exactly once.
                let reader = unsafe { ArrowArrayStreamReader::from_raw(addr as *mut FFI_ArrowArrayStream) }
                    .map_err(|e| BridgeError::Engine(e.into()))?;
                let schema = schemas.iter().find(|(idx, _)| *idx == i).map(|(_, s)| s.clone());
                let schema = schema.ok_or_else(|| BridgeError::Invalid(format!("no input #{i} in the plan")))?;
                inputs.push(Box::new(CheckedStrings { reader: Box::new(reader), schema }));
                continue;
            }
            if source.is_null() {
                return Err(BridgeError::Invalid(format!("input #{i} is {kind:?}, but no source object was given")));
            }
            let schema = schemas
                .iter()
                .find(|(idx, _)| *idx == i)
                .map(|(_, s)| s.clone())
                .ok_or_else(|| BridgeError::Invalid(format!("no input #{i} in the plan")))?;
            match kind {
                InputKind::Range => {
                    // A `RangeSource`, a slice of `spark.range`: three numbers, generated here.
                    let mut long = |name: &'static jni::strings::JNIStr| -> BridgeResult<i64> {
                        Ok(env.call_method(&source, name, jni_sig!("()J"), &[])?.j()?)
                    };
                    let (first, step, count) =
                        (long(jni_str!("first"))?, long(jni_str!("step"))?, long(jni_str!("count"))?);
                    let count = u64::try_from(count)
                        .map_err(|_| BridgeError::Invalid(format!("range slice of {count} rows")))?;
                    let source = env.new_global_ref(&source)?;
                    let reader = RangeReader::new(schema, first, step, count, batch_size, move || check_alive(&source))
                        .map_err(|e| BridgeError::Invalid(e.to_string()))?;
                    inputs.push(Box::new(reader));
                }
                InputKind::Parquet => {
                    // A `ParquetSource`, a Parquet scan's file splits, read here.
                    let task = env.call_method(&source, jni_str!("task"), jni_sig!("()[B"), &[])?;
                    let task = JByteArray::cast_local(env, task.l()?)?;
                    let task = env.convert_byte_array(&task)?;
                    let task = ember_engine::proto::ParquetScanTask::decode(task.as_slice())
                        .map_err(|e| BridgeError::Invalid(format!("undecodable Parquet scan task: {e}")))?;
                    let metrics = env.new_global_ref(&source)?;
                    let source = env.new_global_ref(&source)?;
                    let slot = ScanSlot { filters: Arc::default(), data_columns: task.columns.len() };
                    let filters = slot.filters.clone();
                    scans.insert(i, slot);
                    let reader = ember_engine::planner::parquet_scan::parquet_scan_reader(
                        task,
                        schema,
                        batch_size,
                        move || check_alive(&source),
                        Box::new(move |p| {
                            call_source("reporting what the Parquet reader read and skipped failed", |env| {
                                let long = |n: u64| JValue::Long(i64::try_from(n).unwrap_or(i64::MAX));
                                let args = [
                                    long(p.row_groups),
                                    long(p.pages),
                                    long(p.rows),
                                    long(p.bytes_read),
                                    long(p.rows_read),
                                ];
                                env.call_method(&metrics, jni_str!("pruned"), jni_sig!("(JJJJJ)V"), &args).map(|_| ())
                            })
                        }),
                    )?
                    .with_dynamic_filters(filters);
                    inputs.push(Box::new(reader));
                }
                InputKind::ShuffleBlocks | InputKind::BroadcastBlocks => {
                    // A `ShuffleBlockSource` or `BroadcastBlockSource`: Arrow IPC blocks, decoded here.
                    if kind == InputKind::BroadcastBlocks {
                        let handle = env.call_method(&source, jni_str!("sharedBuilds"), jni_sig!("()J"), &[])?.j()?;
                        if handle != 0 {
                            // SAFETY: a non-null handle is a live `Box<Arc<SharedBuilds>>` from `openSharedBuilds`:
                            // the source holds the broadcast value whose cleaner closes it, so it is open here.
                            let builds = unsafe { &*(handle as *const Arc<SharedBuilds>) };
                            shared.insert(i, builds.clone());
                        }
                    }
                    let source = env.new_global_ref(&source)?;
                    inputs.push(Box::new(ShuffleBlockReader::new(schema, batch_size, move || next_rows(&source))));
                }
                InputKind::CachedBatches => {
                    // A `CachedBatchSource`: a cached table's batches, one IPC stream per column, decoded here.
                    let source = env.new_global_ref(&source)?;
                    inputs.push(Box::new(CachedBatchReader::new(schema, move || next_rows(&source))));
                }
                InputKind::UnsafeRows => {
                    // An `UnsafeRowSource`: a Spark child's rows as UnsafeRow bytes, decoded here.
                    let source = env.new_global_ref(&source)?;
                    inputs.push(Box::new(UnsafeRowReader::new(schema, move || next_rows(&source))));
                }
                InputKind::ArrowStream => unreachable!("handled above"),
            }
        }
        if consumer.is_null() {
            return Err(BridgeError::Invalid("no memory consumer".into()));
        }
        if !ember_engine::expressions::jvm::jvm_evaluator_registered() {
            // Looked up here, in a call from the JVM, so that Spark's class loader finds Ember's class.
            let class = env.find_class(jni_str!("org/apache/spark/sql/ember/execution/JvmExpressions"))?;
            let evaluator = JvmExpressions::new(env.new_global_ref(&class)?);
            ember_engine::expressions::jvm::register_jvm_evaluator(Box::new(evaluator));
        }
        let broker = Arc::new(JvmBroker::new(env.new_global_ref(&consumer)?));
        let plan = NativePlan::for_task_sharing(&proto, &task, inputs, shared, scans, strings_as_bytes, broker)?;
        log::debug!(
            "native plan for task {} (stage {}, partition {})",
            task.task_attempt_id,
            task.stage_id,
            task.partition_id
        );
        let row_batch_bytes = proto.config.as_ref().map_or(0, |c| c.row_batch_bytes);
        let row_batch_bytes = usize::try_from(row_batch_bytes).unwrap_or(usize::MAX);
        let handle = PlanHandle { plan, rows: Vec::new(), rows_pending: false, rows_rest: None, row_batch_bytes };
        Ok(Box::into_raw(Box::new(handle)) as jlong)
    })
    .resolve::<ThrowEmberException>()
}

/// The kind of every Input leaf of the plan, by input index.
fn input_kinds(plan: &ember_engine::proto::Plan) -> Vec<(usize, i32)> {
    fn walk(op: &ember_engine::proto::Operator, out: &mut Vec<(usize, i32)>) {
        if let Some(ember_engine::proto::operator::Kind::Input(input)) = &op.kind {
            out.push((input.input_index as usize, input.kind));
        }
        op.children.iter().for_each(|c| walk(c, out));
    }
    let mut out = vec![];
    if let Some(root) = &plan.root {
        walk(root, &mut out);
    }
    out
}

/// Runs `call` against the JVM (an input source, Spark's memory or code) on this (task) thread, in a local frame
/// of its own: a plan may call the JVM thousands of times within one JNI call. A Java exception is cleared here —
/// the JVM side keeps what it needs and rethrows it — so that no JNI call runs with an exception pending.
pub(crate) fn call_source<T>(
    what: &str,
    call: impl FnOnce(&mut jni::Env) -> jni::errors::Result<T>,
) -> datafusion_common::Result<T> {
    JavaVM::singleton()
        .and_then(|vm| {
            vm.attach_current_thread(|env| -> jni::errors::Result<T> {
                env.with_local_frame(4, |env| -> jni::errors::Result<T> {
                    let out = call(env);
                    if env.exception_check() {
                        env.exception_clear();
                        return Err(JniError::JavaException);
                    }
                    out
                })
            })
        })
        .map_err(|e| DataFusionError::External(format!("{what}: {e}").into()))
}

/// Asks a `RangeSource` or `ParquetSource` whether its task goes on (`checkKilled` throws when the task was killed).
fn check_alive(source: &Global<JObject<'static>>) -> datafusion_common::Result<()> {
    call_source("native input stopped", |env| {
        env.call_method(source, jni_str!("checkKilled"), jni_sig!("()V"), &[]).map(|_| ())
    })
}

/// Pulls the next buffer of rows from a JVM row source (running the Spark child on this thread): `nextRows` packs
/// them into the source's reused array and says how many bytes, copied out here in one go.
fn next_rows(source: &Global<JObject<'static>>) -> datafusion_common::Result<Option<Vec<u8>>> {
    call_source("reading rows from Spark failed", |env| {
        let len = env.call_method(source, jni_str!("nextRows"), jni_sig!("()I"), &[])?.i()?;
        let Ok(len) = usize::try_from(len) else { return Ok(None) };
        let packed = env.call_method(source, jni_str!("packed"), jni_sig!("()[B"), &[])?;
        let array = JByteArray::cast_local(env, packed.l()?)?;
        let mut out = vec![0u8; len];
        // SAFETY: `out` is a live, initialized buffer of `len` bytes borrowed mutably for the view's lifetime;
        // i8 and u8 have the same size and alignment, so the view covers exactly `out`.
        let view = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut i8, len) };
        array.get_region(env, 0, view)?;
        Ok(Some(out))
    })
}

/// Writes the next batch (as a struct array) into the JVM-allocated C structs; returns its row count, or -1
/// at the end.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_ember_jni_NativeLib_nextBatch<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    ptr: jlong,
    array_addr: jlong,
    schema_addr: jlong,
) -> jlong {
    env.with_env(|_env| -> BridgeResult<jlong> {
        let h = handle(ptr)?;
        match h.plan.next_batch()? {
            None => Ok(-1),
            Some(batch) => {
                let rows = batch.num_rows() as jlong;
                let data = StructArray::from(batch).into_data();
                let (array, schema) = to_ffi(&data).map_err(|e| BridgeError::Engine(e.into()))?;
                if array_addr == 0 || schema_addr == 0 {
                    return Err(BridgeError::Invalid("null C data interface address".into()));
                }
                // SAFETY: both addresses (checked non-null) are C structs the JVM allocated for this call
                // (`ArrowArray/ArrowSchema.allocateNew`), uninitialized, so writing without dropping is right; the
                // JVM imports them right after, taking over their release callbacks.
                unsafe {
                    std::ptr::write(array_addr as *mut FFI_ArrowArray, array);
                    std::ptr::write(schema_addr as *mut FFI_ArrowSchema, schema);
                }
                Ok(rows)
            }
        }
    })
    .resolve::<ThrowEmberException>()
}

/// Writes the next batch as Spark `UnsafeRow`s (`ember_engine::unsafe_row`: each row preceded by its size) into
/// `buffer`, a Java byte array the caller reuses from batch to batch (no new array, zeroed and collected, per
/// batch), rows until they reach `ExecConfig.row_batch_bytes` per call (at least one row: a call holds at most
/// about that many bytes plus one row; a batch with more is written over several calls). Returns the bytes
/// written; -1 at the end; or, when `buffer` is too small, minus the size it needs: the rows stay pending, and
/// the next call (with a bigger buffer) writes them. Spark's row operators read the rows in
/// place, with no per-value call through Arrow Java.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_ember_jni_NativeLib_nextRowsInto<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    ptr: jlong,
    buffer: JByteArray<'l>,
) -> jlong {
    env.with_env(|env| -> BridgeResult<jlong> {
        let h = handle(ptr)?;
        if !h.rows_pending {
            let batch = match h.rows_rest.take() {
                Some(rest) => rest,
                None => match h.plan.next_batch()? {
                    Some(batch) => batch,
                    None => return Ok(-1),
                },
            };
            h.rows.clear();
            let (written, rest) = write_rows_bounded(&batch, &mut h.rows, h.row_batch_bytes)?;
            h.rows_rest = rest;
            if h.rows.len() > i32::MAX as usize - 16 {
                return Err(BridgeError::Invalid(format!(
                    "{written} row(s) of {} bytes do not fit a Java array: lower spark.ember.rowBatch.maxBytes",
                    h.rows.len()
                )));
            }
        }
        let len = h.rows.len();
        if buffer.is_null() || len > buffer.len(env)? {
            h.rows_pending = true;
            // A batch of rows is never 1 byte long, so this never reads as the end.
            return Ok(-(len.max(2) as jlong));
        }
        h.rows_pending = false;
        // SAFETY: `h.rows` is live and not mutated while the view exists; u8 and i8 have the same size and
        // alignment, so the view covers exactly its `len` initialized bytes.
        let signed = unsafe { std::slice::from_raw_parts(h.rows.as_ptr() as *const i8, len) };
        buffer.set_region(env, 0, signed)?;
        // Keep the native buffer's capacity for the next batch, but not one a huge row grew it to.
        let keep = if h.row_batch_bytes == 0 { 64 << 20 } else { h.row_batch_bytes.saturating_mul(2).max(1 << 20) };
        if h.rows.capacity() > keep {
            h.rows = Vec::new();
        }
        Ok(len as jlong)
    })
    .resolve::<ThrowEmberException>()
}

/// Appends `batch`'s rows to `out` as `unsafe_row::write_rows` does, but only until `out` holds `max_bytes`
/// (0: no bound), at least one row: slices of as many rows as the bytes per row seen so far say fit in the room
/// left. Returns the rows written and the batch's unwritten rest.
fn write_rows_bounded(
    batch: &RecordBatch,
    out: &mut Vec<u8>,
    max_bytes: usize,
) -> datafusion_common::Result<(usize, Option<RecordBatch>)> {
    let rows = batch.num_rows();
    if max_bytes == 0 {
        return Ok((ember_engine::unsafe_row::write_rows(batch, out)?, None));
    }
    // A first guess from the batch's buffers (too high for slices of bigger buffers: smaller first cuts).
    let mut per_row = (batch.get_array_memory_size() / rows.max(1)).max(8);
    let mut at = 0;
    while at < rows && out.len() < max_bytes {
        let take = ((max_bytes - out.len()) / per_row).clamp(1, rows - at);
        let before = out.len();
        ember_engine::unsafe_row::write_rows(&batch.slice(at, take), out)?;
        at += take;
        per_row = ((out.len() - before) / take).max(8);
    }
    Ok((at, (at < rows).then(|| batch.slice(at, rows - at))))
}

/// What the plan measured (a proto `PlanMetrics`): per operator its baseline values and its own values by
/// name, and the plan's memory now and at its peak. Read once, when the plan closes.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_ember_jni_NativeLib_metrics<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    ptr: jlong,
) -> JByteArray<'l> {
    env.with_env(|env| -> BridgeResult<JByteArray<'l>> {
        let h = handle(ptr)?;
        let bytes = ember_engine::metrics::plan_metrics(&h.plan).encode_to_vec();
        Ok(env.byte_array_from_slice(&bytes)?)
    })
    .resolve::<ThrowEmberException>()
}

/// The engine's default for every knob a plan may leave at 0 (a proto `EngineDefaults`): the JVM's
/// configuration keys take their defaults from it.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_ember_jni_NativeLib_defaults<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> JByteArray<'l> {
    env.with_env(|env| -> BridgeResult<JByteArray<'l>> {
        let bytes = ember_engine::defaults::engine_defaults().encode_to_vec();
        Ok(env.byte_array_from_slice(&bytes)?)
    })
    .resolve::<ThrowEmberException>()
}

/// Every operator-specific metric name the engine reports, per proto operator kind (a proto `MetricNames`):
/// the JVM's tests check each exec's SQL metrics against it.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_ember_jni_NativeLib_metricNames<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> JByteArray<'l> {
    env.with_env(|env| -> BridgeResult<JByteArray<'l>> {
        let bytes = ember_engine::metrics::metric_names().encode_to_vec();
        Ok(env.byte_array_from_slice(&bytes)?)
    })
    .resolve::<ThrowEmberException>()
}

/// Drops the plan: operators' memory goes back to Spark, spill files are deleted.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_ember_jni_NativeLib_closePlan<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    ptr: jlong,
) {
    env.with_env(|_env| -> BridgeResult<()> {
        if ptr != 0 {
            // SAFETY: a non-null handle is a `Box<PlanHandle>` from `createPlan` (`Box::into_raw`); the JVM side
            // closes each handle once, after its last use, so it is freed exactly once.
            drop(unsafe { Box::from_raw(ptr as *mut PlanHandle) });
        }
        Ok(())
    })
    .resolve::<ThrowEmberException>()
}

/// Opens the executor's registry of one broadcast value's shared hash tables (`memory`: a JVM
/// `SharedBuildMemory`, Spark's storage memory); returns its handle, a `Box<Arc<SharedBuilds>>`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_ember_jni_NativeLib_openSharedBuilds<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    memory: JObject<'l>,
) -> jlong {
    env.with_env(|env| -> BridgeResult<jlong> {
        if memory.is_null() {
            return Err(BridgeError::Invalid("no storage memory for shared hash tables".into()));
        }
        let memory = Arc::new(JvmBroadcastMemory::new(env.new_global_ref(&memory)?));
        let builds = Arc::new(SharedBuilds::new(memory));
        Ok(Box::into_raw(Box::new(builds)) as jlong)
    })
    .resolve::<ThrowEmberException>()
}

/// Drops the JVM's reference to a registry of shared hash tables; plans still probing one keep it alive.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_ember_jni_NativeLib_closeSharedBuilds<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    ptr: jlong,
) {
    env.with_env(|_env| -> BridgeResult<()> {
        if ptr != 0 {
            // SAFETY: a non-null handle is a `Box<Arc<SharedBuilds>>` from `openSharedBuilds`; the JVM closes it
            // once, from the cleaner of the broadcast value that owns it, after every use of the handle.
            drop(unsafe { Box::from_raw(ptr as *mut Arc<SharedBuilds>) });
        }
        Ok(())
    })
    .resolve::<ThrowEmberException>()
}

/// Spark's rebase tables for LEGACY Parquet timestamps (a proto `JulianRebaseTables`), once per process before
/// the first native scan of timestamps.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_ember_jni_NativeLib_registerJulianRebase<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    tables: JByteArray<'l>,
) {
    env.with_env(|env| -> BridgeResult<()> {
        let bytes = env.convert_byte_array(&tables)?;
        // Where the tables stop, Spark's own calendar: looked up here, in a call from the JVM, with its loader.
        let class = env.find_class(jni_str!("org/apache/spark/sql/ember/execution/CalendarRebase"))?;
        ember_engine::planner::parquet_scan::register_calendar_rebase(Box::new(JvmCalendar::new(
            env.new_global_ref(&class)?,
        )));
        Ok(ember_engine::planner::parquet_scan::register_julian_rebase(&bytes)?)
    })
    .resolve::<ThrowEmberException>()
}

/// On the driver: unites a join build side's key summaries (a proto `DynamicFilterSummaries`: each map task's
/// `DynamicFilter`) into a proto `DynamicFilterUnion` for the probe side.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_ember_jni_NativeLib_unionDynamicFilters<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    summaries: JByteArray<'l>,
) -> JByteArray<'l> {
    env.with_env(|env| -> BridgeResult<JByteArray<'l>> {
        let bytes = env.convert_byte_array(&summaries)?;
        let summaries = ember_engine::proto::DynamicFilterSummaries::decode(bytes.as_slice())
            .map_err(|e| BridgeError::Invalid(format!("undecodable dynamic filter summaries: {e}")))?;
        let out = ember_engine::planner::dynamic_filter::union_dynamic_filters(&summaries)?;
        Ok(env.byte_array_from_slice(&out.encode_to_vec())?)
    })
    .resolve::<ThrowEmberException>()
}

/// Planning-time question from the driver, the engine's one support call: does the engine run this operator (a
/// serialized proto `Operator` whose `Input` leaves carry its children's schemas) exactly as Spark does, under
/// `config` (the session's serialized `ExecConfig`, with the JVM's version)? Plans it over empty inputs — no
/// data, no memory, nothing executed — and returns null when it plans, else the planning error as the reason.
#[unsafe(no_mangle)]
pub extern "system" fn Java_org_ember_jni_NativeLib_planSupport<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    operator: JByteArray<'l>,
    config: JByteArray<'l>,
) -> JString<'l> {
    env.with_env(|env| -> BridgeResult<JString<'l>> {
        let bytes = env.convert_byte_array(&operator)?;
        let op = ember_engine::proto::Operator::decode(bytes.as_slice())
            .map_err(|e| BridgeError::Invalid(format!("undecodable operator: {e}")))?;
        let config = env.convert_byte_array(&config)?;
        let config = ember_engine::proto::ExecConfig::decode(config.as_slice())
            .map_err(|e| BridgeError::Invalid(format!("undecodable exec config: {e}")))?;
        match ember_engine::planner::check_support(&op, &config) {
            Ok(()) => Ok(JString::null()),
            Err(DataFusionError::Plan(reason)) => Ok(env.new_string(reason)?),
            Err(e) => Ok(env.new_string(e.to_string())?),
        }
    })
    .resolve::<ThrowEmberException>()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    /// 100 rows of 1 to 4 KB strings, written 10 000 bytes at a time: every call stops once past the bound (at
    /// most one row over it), and the calls together write exactly what one unbounded write does.
    #[test]
    fn write_rows_bounded_cuts_a_batch_by_bytes() {
        let schema =
            Arc::new(Schema::new(vec![Field::new("i", DataType::Int64, false), Field::new("s", DataType::Utf8, true)]));
        let strings: StringArray = (0..100).map(|i| Some("x".repeat(1000 * (1 + i % 4)))).collect();
        let batch =
            RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from_iter_values(0..100)), Arc::new(strings)])
                .unwrap();
        let mut whole = Vec::new();
        ember_engine::unsafe_row::write_rows(&batch, &mut whole).unwrap();

        let (max, largest_row) = (10_000, 8 + 8 + 16 + 4000);
        let mut written = Vec::new();
        let (mut rest, mut calls, mut rows) = (Some(batch), 0, 0);
        while let Some(b) = rest.take() {
            let mut out = Vec::new();
            let (n, r) = write_rows_bounded(&b, &mut out, max).unwrap();
            assert!(n >= 1 && out.len() < max + largest_row, "{} bytes in {n} rows", out.len());
            if r.is_some() {
                assert!(out.len() >= max, "stopped early: {} bytes", out.len());
            }
            written.extend_from_slice(&out);
            rows += n;
            calls += 1;
            rest = r;
        }
        assert_eq!(rows, 100);
        assert!(calls >= 20, "{calls} calls");
        assert_eq!(written, whole);
    }
}
