//! The join's state machine: buffer the build side; join in memory, or bucket, spill, and join bucket by bucket.
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use arrow::array::BooleanBufferBuilder;
use arrow::array::{new_null_array, ArrayRef, BooleanArray, RecordBatch, UInt32Array};
use arrow::compute::kernels::boolean::not;
use arrow::compute::{filter_record_batch, take_record_batch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion_common::{internal_datafusion_err, DataFusionError, JoinType, NullEquality, Result};
use datafusion_execution::memory_pool::{MemoryReservation, UnboundedMemoryPool};
use datafusion_execution::runtime_env::RuntimeEnvBuilder;
use datafusion_execution::TaskContext;
use datafusion_physical_expr::PhysicalExprRef;
use datafusion_physical_plan::joins::utils::JoinFilter;
use datafusion_physical_plan::joins::{HashJoinExec, PartitionMode};
use datafusion_physical_plan::metrics::{
    BaselineMetrics, Count, ExecutionPlanMetricsSet, Gauge, MetricBuilder, SpillMetrics, Time,
};
use datafusion_physical_plan::spill::SpillManager;
use datafusion_physical_plan::stream::RecordBatchStreamAdapter;
use datafusion_physical_plan::{ExecutionPlan, RecordBatchStream, SendableRecordBatchStream};
use futures::{Stream, StreamExt};

use super::buckets::{batch_cost, Budget, Router};
use super::chunks::Chunked;
use super::exec::{prunes_probe, JoinDynamicFilterConfig, ProbeScan, SpillingHashJoinConfig};
use super::metric_names;
use super::shared_build::{Build, SharedBuild};
use crate::operators::dynamic_filter::{exact_key_type, DynamicFilter, KeyPruning};
use crate::operators::once::{batches_stream, OnceExec};
use crate::operators::spill::{read_compacted, spill_batches, CoalescingWriter, SpilledSide};

/// The join's metrics (shown per Spark operator).
#[derive(Debug, Clone)]
pub(crate) struct JoinMetrics {
    pub(crate) build_rows: Count,
    pub(crate) probe_rows: Count,
    pub(crate) spilled_buckets: Count,
    pub(crate) split_buckets: Count,
    pub(crate) chunked_buckets: Count,
    pub(crate) peak_reserved: Gauge,
    /// Probe rows the dynamic filter checked, and those it dropped.
    pub(crate) dynamic_filter_rows_checked: Count,
    pub(crate) dynamic_filter_rows_pruned: Count,
    /// The cost gate's decisions: filter kept after the sample, or switched off.
    pub(crate) dynamic_filter_kept: Count,
    pub(crate) dynamic_filter_gated_off: Count,
    /// Bytes of the build keys' summary.
    pub(crate) dynamic_filter_bytes: Gauge,
    /// Time summarizing build keys and filtering probe rows.
    pub(crate) dynamic_filter_time: Time,
    pub(crate) spill: SpillMetrics,
    pub(crate) baseline: BaselineMetrics,
}

impl JoinMetrics {
    pub(crate) fn new(metrics: &ExecutionPlanMetricsSet, partition: usize) -> Self {
        Self {
            build_rows: MetricBuilder::new(metrics).counter(metric_names::BUILD_ROWS, partition),
            probe_rows: MetricBuilder::new(metrics).counter(metric_names::PROBE_ROWS, partition),
            spilled_buckets: MetricBuilder::new(metrics).counter(metric_names::SPILLED_BUCKETS, partition),
            split_buckets: MetricBuilder::new(metrics).counter(metric_names::SPLIT_BUCKETS, partition),
            chunked_buckets: MetricBuilder::new(metrics).counter(metric_names::CHUNKED_BUCKETS, partition),
            peak_reserved: MetricBuilder::new(metrics).gauge(metric_names::PEAK_RESERVED_BYTES, partition),
            dynamic_filter_rows_checked: MetricBuilder::new(metrics)
                .counter(metric_names::DYNAMIC_FILTER_ROWS_CHECKED, partition),
            dynamic_filter_rows_pruned: MetricBuilder::new(metrics)
                .counter(metric_names::DYNAMIC_FILTER_ROWS_PRUNED, partition),
            dynamic_filter_kept: MetricBuilder::new(metrics).counter(metric_names::DYNAMIC_FILTER_KEPT, partition),
            dynamic_filter_gated_off: MetricBuilder::new(metrics)
                .counter(metric_names::DYNAMIC_FILTER_GATED_OFF, partition),
            dynamic_filter_bytes: MetricBuilder::new(metrics).gauge(metric_names::DYNAMIC_FILTER_BYTES, partition),
            dynamic_filter_time: MetricBuilder::new(metrics).subset_time(metric_names::DYNAMIC_FILTER_TIME, partition),
            spill: SpillMetrics::new(metrics, partition),
            baseline: BaselineMetrics::new(metrics, partition),
        }
    }
}

/// What every phase needs: schemas, keys, filter, spill managers, and a context for the inner `HashJoinExec`s.
pub(crate) struct JoinContext {
    pub(super) schema: SchemaRef,
    pub(super) build_schema: SchemaRef,
    pub(super) probe_schema: SchemaRef,
    /// The probe schema with a row-position column appended (probe-preserving joins in chunks).
    pub(super) probe_idx_schema: SchemaRef,
    pub(super) on: Vec<(PhysicalExprRef, PhysicalExprRef)>,
    pub(super) filter: Option<JoinFilter>,
    pub(super) join_type: JoinType,
    pub(super) null_equality: NullEquality,
    pub(super) batch_size: usize,
    pub(super) cap: usize,
    pub(super) spill_enabled: bool,
    pub(super) inner_ctx: Arc<TaskContext>,
    pub(super) build_spill: SpillManager,
    pub(super) probe_spill: SpillManager,
    pub(super) build_router: Router,
    pub(super) probe_router: Router,
    /// Some where the join summarizes its build keys and filters its probe side (valid, and key types alike).
    pub(super) dynamic_filter: Option<(JoinDynamicFilterConfig, Vec<DataType>)>,
    /// Some where the join probes its executor's shared table of a broadcast (see [`SharedBuild`]).
    pub(super) shared: Option<SharedBuild>,
    /// Scans of the task the build side's summary prunes (only where `dynamic_filter` is some).
    pub(super) probe_scans: Vec<ProbeScan>,
    pub(super) metrics: JoinMetrics,
}

impl JoinContext {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        context: &TaskContext,
        schema: SchemaRef,
        build_schema: SchemaRef,
        probe_schema: SchemaRef,
        on: Vec<(PhysicalExprRef, PhysicalExprRef)>,
        filter: Option<JoinFilter>,
        join_type: JoinType,
        null_equality: NullEquality,
        config: SpillingHashJoinConfig,
        metrics: JoinMetrics,
    ) -> Result<Self> {
        let session = context.session_config();
        let compression = session.spill_compression();
        let build_spill = SpillManager::new(context.runtime_env(), metrics.spill.clone(), build_schema.clone())
            .with_compression_type(compression);
        let probe_spill = SpillManager::new(context.runtime_env(), metrics.spill.clone(), probe_schema.clone())
            .with_compression_type(compression);
        let mut fields = probe_schema.fields().iter().cloned().collect::<Vec<_>>();
        fields.push(Arc::new(Field::new("__ember_probe_row", DataType::UInt64, false)));
        let probe_idx_schema = Arc::new(Schema::new(fields));
        // HashJoinExec's memory is reserved by this operator (see `batch_cost`): it runs under a private pool.
        let inner_runtime = RuntimeEnvBuilder::new().with_memory_pool(Arc::new(UnboundedMemoryPool::default()));
        let inner_ctx = Arc::new(
            TaskContext::default().with_session_config(session.clone()).with_runtime(inner_runtime.build_arc()?),
        );
        let build_router = Router { keys: on.iter().map(|(l, _)| l.clone()).collect(), bits: config.bucket_bits };
        let probe_router = Router { keys: on.iter().map(|(_, r)| r.clone()).collect(), bits: config.bucket_bits };
        let dynamic_filter = match config.dynamic_filter {
            Some(c) if prunes_probe(join_type, null_equality) => {
                let build_types = on.iter().map(|(l, _)| l.data_type(&build_schema)).collect::<Result<Vec<_>>>()?;
                let probe_types = on.iter().map(|(_, r)| r.data_type(&probe_schema)).collect::<Result<Vec<_>>>()?;
                // Keys typed differently on the two sides, floats, or keys the row format cannot encode: no filter.
                (build_types == probe_types
                    && build_types.iter().all(exact_key_type)
                    && DynamicFilter::try_new(build_types.clone(), 1, c.filter).is_ok())
                .then_some((c, build_types))
            }
            _ => None,
        };
        Ok(Self {
            schema,
            build_schema,
            probe_schema,
            probe_idx_schema,
            on,
            filter,
            join_type,
            null_equality,
            batch_size: session.batch_size().max(1),
            cap: config.max_build_buffer_bytes,
            spill_enabled: config.spill_enabled,
            inner_ctx,
            build_spill,
            probe_spill,
            build_router,
            probe_router,
            dynamic_filter,
            shared: None,
            probe_scans: vec![],
            metrics,
        })
    }

    /// DataFusion's own hash join of `build` (already reserved) with a probe stream.
    pub(super) fn hash_join(
        &self,
        build: Vec<RecordBatch>,
        probe: SendableRecordBatchStream,
        join_type: JoinType,
    ) -> Result<SendableRecordBatchStream> {
        let left = Arc::new(OnceExec::from_batches(self.build_schema.clone(), build));
        let right = Arc::new(OnceExec::new(probe.schema(), probe));
        HashJoinExec::try_new(
            left,
            right,
            self.on.clone(),
            self.filter.clone(),
            &join_type,
            None,
            PartitionMode::CollectLeft,
            self.null_equality,
            false,
        )?
        .execute(0, self.inner_ctx.clone())
    }

    pub(super) fn read_probe(&self, side: &SpilledSide) -> Result<SendableRecordBatchStream> {
        match &side.file {
            Some(f) => self.probe_spill.read_spill_as_stream_unbuffered(f.clone(), None),
            None => Ok(batches_stream(self.probe_schema.clone(), vec![])),
        }
    }

    /// Build batches of a spill file, compacted ([`read_compacted`]).
    pub(super) fn read_build(&self, side: &SpilledSide) -> Result<SendableRecordBatchStream> {
        match &side.file {
            Some(f) => read_compacted(&self.build_spill, f.clone()),
            None => Ok(batches_stream(self.build_schema.clone(), vec![])),
        }
    }

    /// An empty summary of the build keys, where the join filters its probe side or prunes its probe scans.
    pub(super) fn new_dynamic_filter(&self) -> Result<Option<DynamicFilter>> {
        self.dynamic_filter.as_ref().map(|(c, types)| DynamicFilter::try_new(types.clone(), 1, c.filter)).transpose()
    }

    /// Adds a build batch's keys to the summary.
    pub(super) fn summarize(&self, summary: &mut Option<DynamicFilter>, batch: &RecordBatch) -> Result<()> {
        let Some(f) = summary else { return Ok(()) };
        let _timer = self.metrics.dynamic_filter_time.timer();
        let keys =
            self.on.iter().map(|(l, _)| l.evaluate(batch)?.into_array(batch.num_rows())).collect::<Result<Vec<_>>>()?;
        f.update(0, &keys)
    }

    /// Hands the build side's complete summary to the probe side's scans: they skip row groups, pages and rows
    /// whose keys it rules out from their next row group on.
    fn publish_to_scans(&self, summary: &DynamicFilter) -> Result<()> {
        if self.probe_scans.is_empty() {
            return Ok(());
        }
        let pruning = KeyPruning::of(summary)?;
        for scan in &self.probe_scans {
            scan.filters.publish(pruning.scan_filters(|key| scan.columns.get(key).copied().flatten()));
        }
        Ok(())
    }

    /// The probe stream without the rows whose keys the build side's summary rules out, while the cost gate
    /// lets the filter pay; the summary goes to the probe scans first. The filter is reserved; when the pool
    /// refuses it, the join goes on unfiltered.
    fn filter_probe(
        &self,
        summary: Option<Arc<DynamicFilter>>,
        probe: SendableRecordBatchStream,
        budget: &Budget,
    ) -> Result<SendableRecordBatchStream> {
        let (Some(filter), Some((config, _))) = (summary, &self.dynamic_filter) else { return Ok(probe) };
        self.publish_to_scans(&filter)?;
        if !config.filter_probe {
            return Ok(probe);
        }
        let size = filter.size();
        if budget.try_grow(size).is_err() {
            return Ok(probe);
        }
        self.metrics.dynamic_filter_bytes.set(size);
        let config = *config;
        let keys: Vec<PhysicalExprRef> = self.on.iter().map(|(_, r)| r.clone()).collect();
        let m = self.metrics.clone();
        let schema = probe.schema();
        let (mut on, mut decided, mut checked, mut pruned) = (true, false, 0usize, 0usize);
        let s = probe.filter_map(move |b| {
            let mut apply = |b: RecordBatch| -> Result<Option<RecordBatch>> {
                let rows = b.num_rows();
                if !on || rows == 0 {
                    return Ok((rows > 0).then_some(b));
                }
                let _timer = m.dynamic_filter_time.timer();
                let cols = keys.iter().map(|k| k.evaluate(&b)?.into_array(rows)).collect::<Result<Vec<_>>>()?;
                let mask = filter.might_contain(&cols)?;
                let kept = mask.true_count();
                checked += rows;
                pruned += rows - kept;
                m.dynamic_filter_rows_checked.add(rows);
                m.dynamic_filter_rows_pruned.add(rows - kept);
                if !decided && checked >= config.sample_rows {
                    decided = true;
                    if (pruned as f64) < config.min_pruned_fraction * checked as f64 {
                        on = false;
                        m.dynamic_filter_gated_off.add(1);
                    } else {
                        m.dynamic_filter_kept.add(1);
                    }
                }
                Ok(match kept {
                    0 => None,
                    k if k == rows => Some(b),
                    _ => Some(filter_record_batch(&b, &mask)?),
                })
            };
            futures::future::ready(b.and_then(&mut apply).transpose())
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, s)))
    }

    fn conform(&self, batch: RecordBatch) -> Result<RecordBatch> {
        Ok(RecordBatch::try_new(self.schema.clone(), batch.columns().to_vec())?)
    }

    /// The rows a probe-preserving join emits for probe rows after all chunks: `matched` holds, from `start`,
    /// which rows of `batch` met a build row.
    pub(super) fn probe_leftovers(
        &self,
        batch: &RecordBatch,
        matched: &BooleanBufferBuilder,
        start: usize,
    ) -> Result<Option<RecordBatch>> {
        let mask: BooleanArray = (0..batch.num_rows()).map(|i| Some(matched.get_bit(start + i))).collect();
        let columns: Vec<ArrayRef> = match self.join_type {
            JoinType::Right | JoinType::Full => {
                let probe = filter_record_batch(batch, &not(&mask)?)?;
                let n = probe.num_rows();
                self.build_schema
                    .fields()
                    .iter()
                    .map(|f| new_null_array(f.data_type(), n))
                    .chain(probe.columns().iter().cloned())
                    .collect()
            }
            JoinType::RightSemi => filter_record_batch(batch, &mask)?.columns().to_vec(),
            JoinType::RightAnti => filter_record_batch(batch, &not(&mask)?)?.columns().to_vec(),
            JoinType::RightMark => {
                batch.columns().iter().cloned().chain(std::iter::once(Arc::new(mask) as ArrayRef)).collect()
            }
            other => return Err(DataFusionError::Internal(format!("no probe leftovers for {other:?}"))),
        };
        let out = RecordBatch::try_new(self.schema.clone(), columns)?;
        Ok((out.num_rows() > 0).then_some(out))
    }
}

/// One spilled bucket still to join.
pub(super) struct BucketTask {
    pub(super) build: SpilledSide,
    pub(super) probe: SpilledSide,
    level: u32,
    /// Splitting did not shrink it: join it in chunks.
    hot: bool,
}

enum Phase {
    Start,
    /// The whole build side fit: DataFusion's hash join as is.
    InMemory {
        stream: SendableRecordBatchStream,
        reserved: usize,
    },
    /// Resident buckets join while the probe side streams and is routed.
    Resident {
        stream: SendableRecordBatchStream,
        reserved: usize,
        router: Arc<Mutex<ProbeRouter>>,
        spilled_build: Vec<Option<SpilledSide>>,
    },
    /// Take the next spilled bucket.
    Tasks,
    /// A spilled bucket whose build side fit.
    Bucket {
        stream: SendableRecordBatchStream,
        reserved: usize,
    },
    Chunked(Box<Chunked>),
    Done,
}

pub(crate) struct JoinStream {
    jc: Arc<JoinContext>,
    budget: Arc<Budget>,
    build: Option<SendableRecordBatchStream>,
    probe: Option<SendableRecordBatchStream>,
    phase: Phase,
    tasks: Vec<BucketTask>,
}

impl JoinStream {
    pub(crate) fn new(
        jc: Arc<JoinContext>,
        reservation: MemoryReservation,
        build: SendableRecordBatchStream,
        probe: SendableRecordBatchStream,
    ) -> Self {
        let budget = Arc::new(Budget::new(reservation, jc.cap, jc.metrics.peak_reserved.clone()));
        Self { jc, budget, build: Some(build), probe: Some(probe), phase: Phase::Start, tasks: vec![] }
    }

    /// The output stream; `reorder` (column order, schema) applies to every batch.
    pub(crate) fn into_stream(self, reorder: Option<(Vec<usize>, SchemaRef)>) -> SendableRecordBatchStream {
        let schema = reorder.as_ref().map(|(_, s)| s.clone()).unwrap_or_else(|| self.jc.schema.clone());
        let s = futures::stream::unfold((self, reorder), |(mut s, reorder)| async move {
            let timer = s.jc.metrics.baseline.elapsed_compute().clone();
            let start = std::time::Instant::now();
            let mut next = s.next_batch().await;
            if let (Ok(Some(b)), Some((order, schema))) = (&next, &reorder) {
                let columns = order.iter().map(|&i| b.column(i).clone()).collect();
                next = RecordBatch::try_new(schema.clone(), columns).map(Some).map_err(Into::into);
            }
            timer.add_elapsed(start);
            match next {
                Ok(Some(b)) => {
                    s.jc.metrics.baseline.record_output(b.num_rows());
                    Some((Ok(b), (s, reorder)))
                }
                Ok(None) => {
                    s.close();
                    None
                }
                Err(e) => {
                    s.close();
                    Some((Err(e), (s, reorder)))
                }
            }
        });
        Box::pin(RecordBatchStreamAdapter::new(schema, s))
    }

    /// Drops every stream, file and reservation.
    fn close(&mut self) {
        self.phase = Phase::Done;
        self.tasks.clear();
        self.build = None;
        self.probe = None;
    }

    async fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            match &mut self.phase {
                Phase::Start => self.start().await?,
                Phase::InMemory { stream, reserved } | Phase::Bucket { stream, reserved } => {
                    match stream.next().await {
                        Some(b) => {
                            let b = b?;
                            if b.num_rows() > 0 {
                                return Ok(Some(self.jc.conform(b)?));
                            }
                        }
                        None => {
                            let reserved = *reserved;
                            self.phase = Phase::Tasks;
                            self.budget.shrink(reserved);
                        }
                    }
                }
                Phase::Resident { stream, .. } => match stream.next().await {
                    Some(b) => {
                        let b = b?;
                        if b.num_rows() > 0 {
                            return Ok(Some(self.jc.conform(b)?));
                        }
                    }
                    None => self.end_resident().await?,
                },
                Phase::Tasks => match self.tasks.pop() {
                    Some(task) => self.open_task(task).await?,
                    None => {
                        self.phase = Phase::Done;
                        return Ok(None);
                    }
                },
                Phase::Chunked(c) => match c.next(&self.jc, &self.budget).await? {
                    Some(b) => return Ok(Some(b)),
                    None => self.phase = Phase::Tasks,
                },
                Phase::Done => return Ok(None),
            }
        }
    }

    /// Buffers the build side; joins in memory if it all fits, else routes both sides to buckets.
    async fn start(&mut self) -> Result<()> {
        let jc = self.jc.clone();
        let mut build = self.build.take().ok_or_else(|| internal_datafusion_err!("join build side taken twice"))?;
        let probe_rows = jc.metrics.probe_rows.clone();
        let probe_in = self.probe.take().ok_or_else(|| internal_datafusion_err!("join probe side taken twice"))?;
        let mut probe: SendableRecordBatchStream = Box::pin(RecordBatchStreamAdapter::new(
            probe_in.schema(),
            probe_in.inspect(move |b| {
                if let Ok(b) = b {
                    probe_rows.add(b.num_rows())
                }
            }),
        ));
        // (Not where the build side prunes the probe side's scans: the peek would read their first row group
        // before the summary exists.)
        if !emits_build_rows_alone(jc.join_type) && jc.probe_scans.is_empty() {
            // Without a probe row there is no output: look at the probe side first, and if it is empty never
            // read (decode, hash, reserve) the build side — a broadcast's build side is otherwise built in every
            // task, also in the many that AQE gives no probe rows (TPC-H Q15).
            let Some(first) = first_rows(&mut probe).await? else {
                self.phase = Phase::Done;
                return Ok(());
            };
            let schema = probe.schema();
            probe = Box::pin(RecordBatchStreamAdapter::new(
                schema,
                futures::stream::once(async { Ok(first) }).chain(probe),
            ));
        }
        if let Some(shared) = &jc.shared {
            match shared.table(&jc, build).await? {
                Build::Shared(table) => {
                    let probe = jc.filter_probe(table.summary(), probe, &self.budget)?;
                    self.phase = Phase::InMemory { stream: table.probe(&jc, probe)?, reserved: 0 };
                    return Ok(());
                }
                Build::Own(own) => build = own,
            }
        }
        let mut held = vec![];
        let mut reserved = 0;
        let mut overflow = None;
        let mut summary = jc.new_dynamic_filter()?;
        while let Some(b) = build.next().await {
            let b = b?;
            if b.num_rows() == 0 {
                continue;
            }
            jc.metrics.build_rows.add(b.num_rows());
            jc.summarize(&mut summary, &b)?;
            let cost = batch_cost(&b);
            match self.budget.try_grow(cost) {
                Ok(()) => {
                    reserved += cost;
                    held.push(b);
                }
                Err(e) if !jc.spill_enabled => {
                    return Err(DataFusionError::ResourcesExhausted(format!(
                        "hash join build side does not fit and spilling is disabled \
                         (spark.ember.spillingHashJoin.spill.enabled=false): {e}"
                    )));
                }
                Err(_) => {
                    overflow = Some(b);
                    break;
                }
            }
        }
        let Some(overflow) = overflow else {
            let probe = jc.filter_probe(summary.map(Arc::new), probe, &self.budget)?;
            let stream = jc.hash_join(held, probe, jc.join_type)?;
            self.phase = Phase::InMemory { stream, reserved };
            return Ok(());
        };

        // The pool said no: route to buckets, spilling the largest ones.
        let mut buckets = BuildBuckets::new(jc.build_router.fan_out());
        for h in held {
            let cost = batch_cost(&h);
            let pieces = jc.build_router.partition(&h, 0)?;
            drop(h);
            self.budget.shrink(cost);
            for (i, p) in pieces {
                buckets.add(i, p, &jc, &self.budget)?;
            }
        }
        for (i, p) in jc.build_router.partition(&overflow, 0)? {
            buckets.add(i, p, &jc, &self.budget)?;
        }
        drop(overflow);
        while let Some(b) = build.next().await {
            let b = b?;
            jc.metrics.build_rows.add(b.num_rows());
            jc.summarize(&mut summary, &b)?;
            for (i, p) in jc.build_router.partition(&b, 0)? {
                buckets.add(i, p, &jc, &self.budget)?;
            }
        }
        let (resident, reserved, spilled_build) = buckets.finish(&self.budget)?;
        let probe = jc.filter_probe(summary.map(Arc::new), probe, &self.budget)?;
        let router = Arc::new(Mutex::new(ProbeRouter {
            jc: jc.clone(),
            budget: self.budget.clone(),
            input: Some(probe),
            resident: spilled_build.iter().map(Option::is_none).collect(),
            writers: spilled_build.iter().map(|_| None).collect(),
        }));
        let routed = Box::pin(RouterStream { schema: jc.probe_schema.clone(), router: router.clone() });
        let stream = jc.hash_join(resident, routed, jc.join_type)?;
        self.phase = Phase::Resident { stream, reserved, router, spilled_build };
        Ok(())
    }

    /// The resident join is over: route what probe rows it did not pull, and queue the spilled buckets.
    async fn end_resident(&mut self) -> Result<()> {
        let Phase::Resident { stream, reserved, router, spilled_build } =
            std::mem::replace(&mut self.phase, Phase::Tasks)
        else {
            unreachable!()
        };
        drop(stream);
        self.budget.shrink(reserved);
        // An inner join over an empty resident build side may stop before the probe side ends.
        let input = router.lock().unwrap().input.take();
        if let Some(mut input) = input {
            while let Some(b) = input.next().await {
                let b = b?;
                let mut r = router.lock().unwrap();
                r.route(b)?;
            }
        }
        let writers = std::mem::take(&mut router.lock().unwrap().writers);
        for (build, writer) in spilled_build.into_iter().zip(writers).rev() {
            let Some(build) = build else { continue };
            let probe = match writer {
                Some(w) => w.finish(self.budget.as_ref())?,
                None => SpilledSide::default(),
            };
            self.tasks.push(BucketTask { build, probe, level: 0, hot: false });
        }
        Ok(())
    }

    /// Joins a spilled bucket: in memory if its build side fits, else split it, else in chunks.
    async fn open_task(&mut self, task: BucketTask) -> Result<()> {
        let jc = self.jc.clone();
        let mut batches = vec![];
        let mut reserved = 0;
        let mut fits = true;
        let mut reader = jc.read_build(&task.build)?;
        while let Some(b) = reader.next().await {
            let b = b?;
            let cost = batch_cost(&b);
            if self.budget.try_grow(cost).is_ok() {
                reserved += cost;
                batches.push(b);
            } else {
                fits = false;
                break;
            }
        }
        drop(reader);
        if fits {
            let stream = jc.hash_join(batches, jc.read_probe(&task.probe)?, jc.join_type)?;
            self.phase = Phase::Bucket { stream, reserved };
            return Ok(());
        }
        drop(batches);
        self.budget.shrink(reserved);
        if !task.hot && task.level < jc.build_router.max_level() {
            self.split(task).await
        } else {
            jc.metrics.chunked_buckets.add(1);
            self.phase = Phase::Chunked(Box::new(Chunked::new(&jc, &self.budget, task)?));
            Ok(())
        }
    }

    /// Splits a bucket on the next hash bits.
    async fn split(&mut self, task: BucketTask) -> Result<()> {
        let jc = self.jc.clone();
        let level = task.level + 1;
        jc.metrics.split_buckets.add(1);
        let build =
            split_side(jc.read_build(&task.build)?, &jc.build_spill, &jc.build_router, level, &jc, &self.budget)
                .await?;
        let probe =
            split_side(jc.read_probe(&task.probe)?, &jc.probe_spill, &jc.probe_router, level, &jc, &self.budget)
                .await?;
        for (b, p) in build.into_iter().zip(probe).rev() {
            if b.rows == 0 && p.rows == 0 {
                continue;
            }
            // Splitting barely shrank it (one hot key, the null keys, and perhaps a few others): splitting more
            // would rewrite the same rows again and again, so join it in chunks (right for any bucket).
            let hot = b.rows * 8 >= task.build.rows * 7;
            self.tasks.push(BucketTask { build: b, probe: p, level, hot });
        }
        Ok(())
    }
}

async fn split_side(
    mut input: SendableRecordBatchStream,
    manager: &SpillManager,
    router: &Router,
    level: u32,
    jc: &JoinContext,
    budget: &Budget,
) -> Result<Vec<SpilledSide>> {
    let mut writers: Vec<Option<CoalescingWriter>> = (0..router.fan_out()).map(|_| None).collect();
    while let Some(b) = input.next().await {
        for (i, p) in router.partition(&b?, level)? {
            let writer = match &mut writers[i] {
                Some(w) => w,
                none => none.insert(CoalescingWriter::new(manager, jc.batch_size)?),
            };
            writer.push(p, budget)?;
        }
    }
    writers
        .into_iter()
        .map(|w| match w {
            Some(w) => w.finish(budget),
            None => Ok(SpilledSide::default()),
        })
        .collect()
}

/// Build-side buckets while the build input is read: resident ones hold batches, spilled ones a writer.
struct BuildBuckets {
    batches: Vec<Vec<RecordBatch>>,
    cost: Vec<usize>,
    writers: Vec<Option<CoalescingWriter>>,
}

impl BuildBuckets {
    fn new(n: usize) -> Self {
        Self { batches: vec![vec![]; n], cost: vec![0; n], writers: (0..n).map(|_| None).collect() }
    }

    fn add(&mut self, i: usize, piece: RecordBatch, jc: &JoinContext, budget: &Budget) -> Result<()> {
        loop {
            if let Some(w) = &mut self.writers[i] {
                return w.push(piece, budget);
            }
            let cost = batch_cost(&piece);
            if budget.try_grow(cost).is_ok() {
                self.cost[i] += cost;
                self.batches[i].push(piece);
                return Ok(());
            }
            // Bucket `i` is resident, so there is a victim.
            let victim = (0..self.cost.len())
                .filter(|&j| self.writers[j].is_none())
                .max_by_key(|&j| (self.cost[j], j == i))
                .ok_or_else(|| internal_datafusion_err!("no resident bucket to spill"))?;
            let batches = std::mem::take(&mut self.batches[victim]);
            let mut w = spill_batches(&jc.build_spill, jc.batch_size, batches)?;
            budget.shrink(std::mem::take(&mut self.cost[victim]));
            w.reserve(budget)?;
            self.writers[victim] = Some(w);
            jc.metrics.spilled_buckets.add(1);
        }
    }

    /// Resident batches and their reservation, and per bucket its spilled build side (None: resident).
    #[allow(clippy::type_complexity)]
    fn finish(self, budget: &Budget) -> Result<(Vec<RecordBatch>, usize, Vec<Option<SpilledSide>>)> {
        let reserved = self.cost.iter().sum();
        let mut resident = vec![];
        let mut spilled = vec![];
        for (batches, w) in self.batches.into_iter().zip(self.writers) {
            match w {
                Some(w) => spilled.push(Some(w.finish(budget)?)),
                None => {
                    resident.extend(batches);
                    spilled.push(None);
                }
            }
        }
        Ok((resident, reserved, spilled))
    }
}

/// Routes probe batches: rows of resident buckets go on to the resident join, others to their bucket's file.
struct ProbeRouter {
    jc: Arc<JoinContext>,
    budget: Arc<Budget>,
    input: Option<SendableRecordBatchStream>,
    resident: Vec<bool>,
    writers: Vec<Option<CoalescingWriter>>,
}

impl ProbeRouter {
    fn route(&mut self, batch: RecordBatch) -> Result<Option<RecordBatch>> {
        let buckets = self.jc.probe_router.bucket_of_rows(&batch, 0)?;
        if buckets.iter().all(|&b| self.resident[b]) {
            return Ok((batch.num_rows() > 0).then_some(batch));
        }
        let mut indices: Vec<Vec<u32>> = vec![vec![]; self.resident.len()];
        let mut resident = vec![];
        for (row, b) in buckets.into_iter().enumerate() {
            if self.resident[b] {
                resident.push(row as u32);
            } else {
                indices[b].push(row as u32);
            }
        }
        for (b, idx) in indices.into_iter().enumerate() {
            if idx.is_empty() {
                continue;
            }
            let piece = take_record_batch(&batch, &UInt32Array::from(idx))?;
            let writer = match &mut self.writers[b] {
                Some(w) => w,
                none => none.insert(CoalescingWriter::new(&self.jc.probe_spill, self.jc.batch_size)?),
            };
            writer.push(piece, self.budget.as_ref())?;
        }
        if resident.is_empty() {
            return Ok(None);
        }
        Ok(Some(take_record_batch(&batch, &UInt32Array::from(resident))?))
    }
}

struct RouterStream {
    schema: SchemaRef,
    router: Arc<Mutex<ProbeRouter>>,
}

impl Stream for RouterStream {
    type Item = Result<RecordBatch>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut r = self.router.lock().unwrap();
        loop {
            let Some(input) = r.input.as_mut() else { return Poll::Ready(None) };
            match input.poll_next_unpin(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    r.input = None;
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Some(Ok(b))) => match r.route(b) {
                    Err(e) => return Poll::Ready(Some(Err(e))),
                    Ok(Some(b)) => return Poll::Ready(Some(Ok(b))),
                    Ok(None) => continue,
                },
            }
        }
    }
}

impl RecordBatchStream for RouterStream {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// Whether `join_type` (build side left) outputs build rows when no probe row comes: build-preserving outer
/// joins, and semi/anti/mark joins that return build rows.
fn emits_build_rows_alone(join_type: JoinType) -> bool {
    matches!(join_type, JoinType::Left | JoinType::Full | JoinType::LeftAnti | JoinType::LeftMark)
}

/// The first non-empty batch of `stream`, if any.
async fn first_rows(stream: &mut SendableRecordBatchStream) -> Result<Option<RecordBatch>> {
    while let Some(b) = stream.next().await {
        let b = b?;
        if b.num_rows() > 0 {
            return Ok(Some(b));
        }
    }
    Ok(None)
}
