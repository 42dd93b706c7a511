package org.ember

import org.apache.spark.sql.internal.SQLConf
import org.ember.jni.NativeLib

/**
 * Every Ember configuration key, with its default and what a user sees change. `docs/configs.md` is
 * generated from this registry (`make docs`); `EmberConfDocsSuite` keeps the two in sync.
 */
object EmberConf {

  final case class Entry[T](key: String, default: T, doc: String, parse: String => T) {

    /** The key's former name, still read when the key itself is not set. */
    def formerKey: Option[String] = FormerKeys.get(key)

    /** The value in the current session (SQL conf), read at planning time on the driver. */
    def get(conf: SQLConf = SQLConf.get): T =
      (key +: formerKey.toSeq).iterator
        .map(k => conf.getConfString(k, null))
        .find(_ != null)
        .map(parse)
        .getOrElse(default)

    /** The value in a SparkConf-like lookup (executor start-up, static keys). */
    def get(lookup: String => Option[String]): T =
      lookup(key).orElse(formerKey.flatMap(lookup)).map(parse).getOrElse(default)
  }

  /**
   * Keys renamed so that each operator has one name in every layer (conf key, serde, exec node, proto message,
   * Rust module): the former names keep working.
   */
  private lazy val FormerKeys: Map[String, String] = Map(
    "spark.ember.exec.spillingHashJoin.enabled" -> "spark.ember.exec.shuffledHashJoin.enabled",
    "spark.ember.spillingHashJoin.spill.enabled" -> "spark.ember.hashJoin.spill.enabled",
    "spark.ember.spillingHashJoin.spill.maxBuildBufferBytes" -> "spark.ember.hashJoin.spill.maxBuildBufferBytes",
    "spark.ember.spillingHashJoin.bucketBits" -> "spark.ember.hashJoin.bucketBits",
    "spark.ember.exec.prefixWindow.enabled" -> "spark.ember.exec.window.enabled",
    "spark.ember.prefixWindow.prefixDifference.enabled" -> "spark.ember.window.prefix.enabled",
    "spark.ember.prefixWindow.segmentRows" -> "spark.ember.window.segmentRows",
    "spark.ember.slidingSumRewrite.enabled" -> "spark.ember.window.prefixRewrite.enabled",
    "spark.ember.slidingSumRewrite.minTotalWidth" -> "spark.ember.window.prefixRewrite.minTotalWidth"
  )

  /**
   * The engine's defaults (`NativeLib.defaults`): the one home of every default a plan may also leave at 0,
   * read once. Without the native library (Ember then stays off) every one is 0, which the engine reads as its
   * default.
   */
  private lazy val engine: proto.EngineDefaults =
    if (NativeLib.isAvailable) proto.EngineDefaults.parseFrom(NativeLib.defaults())
    else proto.EngineDefaults.getDefaultInstance

  private val entries = scala.collection.mutable.ArrayBuffer.empty[Entry[_]]

  private def register[T](e: Entry[T]): Entry[T] = { entries += e; e }

  private def bool(key: String, default: Boolean, doc: String) =
    register(Entry[Boolean](key, default, doc, _.trim.toBoolean))
  private def long(key: String, default: Long, doc: String) =
    register(Entry[Long](key, default, doc, _.trim.toLong))
  private def string(key: String, default: String, doc: String) =
    register(Entry[String](key, default, doc, identity))

  val ENABLED: Entry[Boolean] = bool(
    "spark.ember.enabled",
    default = true,
    "Master switch. When false, every query runs on Spark's own operators. A runtime SQL conf: " +
      "`spark.conf.set(\"spark.ember.enabled\", false)` turns Ember off for the following queries of the session."
  )

  val EXEC_FILTER: Entry[Boolean] = bool(
    "spark.ember.exec.filter.enabled",
    default = true,
    "Run `FilterExec` natively (as `EmberFilterExec`)."
  )

  val EXEC_PROJECT: Entry[Boolean] = bool(
    "spark.ember.exec.project.enabled",
    default = true,
    "Run `ProjectExec` natively (as `EmberProjectExec`)."
  )

  val EXEC_EXPAND: Entry[Boolean] = bool(
    "spark.ember.exec.expand.enabled",
    default = true,
    "Run `ExpandExec` (grouping sets, ROLLUP, CUBE, several DISTINCT aggregates) natively (as `EmberExpandExec`)."
  )

  val EXEC_SORT: Entry[Boolean] = bool(
    "spark.ember.exec.sort.enabled",
    default = true,
    "Run `SortExec` natively (as `EmberSortExec`): Ember's sort (the radix sort of " +
      "`spark.ember.sort.radix.enabled` where it applies, else keys in row format), which spills sorted runs " +
      "under Spark's memory pool and merges them in as many passes as its memory needs."
  )

  val SORT_RADIX: Entry[Boolean] = bool(
    "spark.ember.sort.radix.enabled",
    default = true,
    "Sort a native sort's input by packing each row's keys into one integer and radix sorting it, when every " +
      "key is a boolean, integral, float, double, date, timestamp or DECIMAL(p <= 18) expression and the task's " +
      "key ranges pack into 128 bits with the row's position (else keys are compared in arrow's row format). " +
      "The same order either way: rows with equal keys keep their input order."
  )

  val EXEC_LIMIT: Entry[Boolean] = bool(
    "spark.ember.exec.limit.enabled",
    default = true,
    "Run `LocalLimitExec` and `GlobalLimitExec` natively (as `EmberLocalLimitExec` / `EmberGlobalLimitExec`)."
  )

  val EXEC_TAKE_ORDERED_AND_PROJECT: Entry[Boolean] = bool(
    "spark.ember.exec.takeOrderedAndProject.enabled",
    default = true,
    "Run `TakeOrderedAndProjectExec` (ORDER BY ... LIMIT) natively: a top-k sort per partition " +
      "(`EmberSortExec` with a fetch), Ember's single-partition shuffle, then `EmberTakeOrderedAndProjectExec` " +
      "(top-k sort, offset, projection)."
  )

  val EXEC_COLLECT_LIMIT: Entry[Boolean] = bool(
    "spark.ember.exec.collectLimit.enabled",
    default = true,
    "Run `CollectLimitExec` (a LIMIT at the top of a collected query) over a native child as " +
      "`EmberCollectLimitExec`: `collect()` takes the rows as Spark does (`executeTake` over the native child, " +
      "scanning only the partitions it needs); executed as an RDD, the per-partition limit, the single-partition " +
      "shuffle and the final limit run natively."
  )

  val EXEC_PREFIX_WINDOW: Entry[Boolean] = bool(
    "spark.ember.exec.prefixWindow.enabled",
    default = true,
    "Run `WindowExec` natively (as `EmberPrefixWindowExec`): row_number, rank, dense_rank, lag, lead, and sum, count, " +
      "avg, min, max over ROWS frames and over RANGE frames bounded by UNBOUNDED / CURRENT ROW."
  )

  val PREFIX_WINDOW_PREFIX_DIFFERENCE: Entry[Boolean] = bool(
    "spark.ember.prefixWindow.prefixDifference.enabled",
    default = true,
    "Evaluate the integral SUM / COUNT / AVG frames of a native window from one running prefix per measure (two " +
      "lookups per frame, whatever its width). When false, each frame is evaluated on its own (add-and-retract, " +
      "or a checked fold under ANSI): the baseline the prefix evaluation is measured against. Same results."
  )

  val PREFIX_WINDOW_SEGMENT_ROWS: Entry[Long] = long(
    "spark.ember.prefixWindow.segmentRows",
    default = engine.getPrefixWindowSegmentRows,
    "A native window partition longer than this many rows is evaluated in segments of about this size (plus " +
      "the rows its frames and lag/lead offsets reach before and after, and carried running sums, counts, " +
      "extrema and ranks) when every window expression needs only a bounded neighbourhood of each row: ROWS " +
      "frames without UNBOUNDED FOLLOWING, RANGE frames ending at the current row, row_number, rank, " +
      "dense_rank, lag, lead. Memory then stays bounded whatever the partition's size; a refusal from the " +
      "memory pool cuts smaller segments. Same results. When the only other expressions are aggregates over " +
      "the whole partition (sum(x) OVER (PARTITION BY k), OVER ()), a partition the memory pool refuses is " +
      "spilled to disk and read back in segments of this size. Other specs hold a whole partition in memory."
  )

  val SLIDING_SUM_REWRITE: Entry[Boolean] = bool(
    "spark.ember.slidingSumRewrite.enabled",
    default = false,
    "Optimizer rule for Spark's own window operator: rewrite the sliding integral SUMs of one window spec " +
      "(ROWS BETWEEN n PRECEDING AND CURRENT ROW) into one running aggregate that keeps recent prefix sums per " +
      "measure (frames ending in FOLLOWING: running sums plus lag/lead differences), over the same spec (no new " +
      "shuffle or sort). Applied only with spark.sql.ansi.enabled=false, where it is exact; " +
      "queries with ANSI on, float/decimal measures, DISTINCT, FILTER or non-literal bounds are left untouched."
  )

  val SLIDING_SUM_REWRITE_MIN_WIDTH: Entry[Long] = long(
    "spark.ember.slidingSumRewrite.minTotalWidth",
    default = 16,
    "The rewrite applies to a window spec only when the frame widths (n + 1 rows) of its qualifying sums add " +
      "up to at least this many rows. The rewrite adds about 4 window columns per measure (running sum and " +
      "count, then two lags per frame) and Spark's running frame and offset lookups cost about one row update " +
      "each, so below ~16 rows of total width the refold it replaces is not slower."
  )

  val EXEC_AGGREGATE: Entry[Boolean] = bool(
    "spark.ember.exec.aggregate.enabled",
    default = true,
    "Run `HashAggregateExec`, `ObjectHashAggregateExec` and `SortAggregateExec` (when no function's result " +
      "depends on its input order) natively (as `EmberAggregateExec`) when every function is count, " +
      "sum/avg (of decimals; of other numbers outside TRY mode), min/max of an orderable type (FLOAT/DOUBLE " +
      "in Spark's NaN and -0.0 order) or first/last (FILTER clauses in partial aggregates); intermediate buffers are " +
      "Spark's, so native and Spark partial/final aggregates mix."
  )

  val AGG_ADAPTIVE_ENABLED: Entry[Boolean] = bool(
    "spark.ember.aggregate.adaptivePartial.enabled",
    default = true,
    "Let a native grouped partial aggregate stop combining and pass rows straight to the shuffle (as one-row " +
      "partial states) when HyperLogLog++ sketches of its keys estimate that combining will not shrink the " +
      "data; it resumes when keys start repeating. Off: always combine, as Spark does."
  )

  val AGG_ADAPTIVE_MIN_ROWS: Entry[Long] = long(
    "spark.ember.aggregate.adaptivePartial.minRows",
    default = engine.getAdaptivePartialMinRows,
    "Input rows a native partial aggregate combines before it first estimates whether combining pays."
  )

  val AGG_ADAPTIVE_MIN_REDUCTION: Entry[Double] = register(
    Entry[Double](
      "spark.ember.aggregate.adaptivePartial.minReduction",
      engine.getAdaptivePartialMinReduction,
      "A native partial aggregate passes rows through when combining is estimated to remove less than this " +
        "share (0..1) of its input rows; higher values pass through sooner.",
      _.trim.toDouble
    )
  )

  val AGG_ADAPTIVE_PRECISION: Entry[Long] = long(
    "spark.ember.aggregate.adaptivePartial.precision",
    default = engine.getAdaptivePartialPrecision.toLong,
    "HyperLogLog++ precision (4..18) of the partial aggregate's key sketches: 2^p registers, ~1.04/sqrt(2^p) " +
      "relative error (0.8% at 14, 12 KiB per sketch)."
  )

  val AGG_ADAPTIVE_FORCE_PASS_THROUGH: Entry[Boolean] = bool(
    "spark.ember.aggregate.adaptivePartial.forcePassThrough.enabled",
    default = false,
    "Test knob: native partial aggregates pass every row through from the first one (no combining)."
  )

  val AGG_ADAPTIVE_FIXED_PROBE: Entry[Boolean] = bool(
    "spark.ember.aggregate.adaptivePartial.fixedProbe.enabled",
    default = false,
    "Benchmark baseline: decide as DataFusion and Velox do instead of with sketches — after `minRows` rows, " +
      "stop combining for good when the exact group count shows a reduction below `minReduction`."
  )

  val AGG_RADIX_ENABLED: Entry[Boolean] = bool(
    "spark.ember.aggregate.radix.enabled",
    default = true,
    "A native final or partial-merge aggregate with grouping keys splits its hash table into 64 cache-sized " +
      "partitions once it holds `minGroups` groups, and spills whole partitions when Spark's memory pool " +
      "refuses more; off: DataFusion's single-table aggregate (which spills by sorting)."
  )

  val AGG_RADIX_MIN_GROUPS: Entry[Long] = long(
    "spark.ember.aggregate.radix.minGroups",
    default = engine.getRadixMergeMinGroups,
    "Groups the native merging aggregate holds in one hash table before it splits into partitions."
  )

  val AGG_RADIX_FIRST_SEEN_ORDER: Entry[Boolean] = bool(
    "spark.ember.aggregate.radix.firstSeenOrder.enabled",
    default = false,
    "Past `minGroups`, emit the native merging aggregate's groups in the order it first met them (as Spark's " +
      "hash aggregate does while it does not spill) instead of partition by partition; costs one gather of the " +
      "output. Only results that depend on an aggregate's unspecified output order can tell the difference."
  )

  val AGG_NATIVE_SIDES: Entry[String] = string(
    "spark.ember.aggregate.nativeSides",
    default = "both",
    "Test knob: `partial` runs only partial aggregates natively (Spark merges), `final` only the merging " +
      "ones (PartialMerge/Final), `both` all of them."
  )

  val EXPLAIN_FALLBACK: Entry[Boolean] = bool(
    "spark.ember.explainFallback.enabled",
    default = false,
    "Log, once per planned query, every operator that stayed in Spark and why. The reasons also appear in " +
      "`EXPLAIN EXTENDED`/`FORMATTED` output when `spark.sql.extendedExplainProviders` includes " +
      "`org.ember.EmberExplainInfo`."
  )

  val NATIVE_COLUMNAR_TO_ROW: Entry[Boolean] = bool(
    "spark.ember.exec.nativeColumnarToRow.enabled",
    default = true,
    "Where Spark needs rows from a native block, write them natively (Spark's UnsafeRow bytes, built in " +
      "Rust) instead of reading each value through Arrow Java in Spark's ColumnarToRowExec."
  )

  val NATIVE_ROW_TO_COLUMNAR: Entry[Boolean] = bool(
    "spark.ember.exec.nativeRowToColumnar.enabled",
    default = true,
    "Hand a Spark child's rows to a native block as their UnsafeRow bytes, decoded into Arrow in Rust, " +
      "instead of writing each value through Spark's ArrowWriter."
  )

  val BATCH_SIZE: Entry[Long] = long(
    "spark.ember.batchSize",
    default = engine.getBatchSize.toLong,
    "Rows per Arrow batch between Spark and the native engine, and inside it."
  )

  val ROW_BATCH_BYTES: Entry[Long] = long(
    "spark.ember.rowBatch.maxBytes",
    default = 16L << 20,
    "Rows that cross between Spark and a native block as UnsafeRow bytes (a Spark child's rows into the engine, " +
      "a native block's rows back to Spark) are handed over in buffers of about this many bytes at most: a " +
      "buffer takes rows until it holds this many bytes (or spark.ember.batchSize rows), so wide rows make " +
      "batches of fewer rows instead of one huge Java array. A single row larger than this still crosses " +
      "alone, and the buffer shrinks back after it. Same results; lower it when rows are megabytes wide."
  )

  val SPILL_COMPRESSION: Entry[String] = string(
    "spark.ember.spill.compression",
    default = "lz4",
    "Compression of native spill files (Arrow IPC): `lz4` or `none`."
  )

  val SORT_SPILL_RESERVATION: Entry[Long] = long(
    "spark.ember.sort.spillReservationBytes",
    default = 0,
    "No longer needed: memory DataFusion's sort sets aside for merging its spill files (0: " +
      s"${engine.getSortSpillReservationBytes >> 20} MiB). Ember's sorts reserve their merges themselves and do not " +
      "read it; DataFusion's sort only runs the top-k of ORDER BY ... LIMIT, which does not spill."
  )

  val MEMORY_HEADROOM: Entry[Long] = long(
    "spark.ember.memory.headroomBytes",
    default = 1L << 20,
    "Memory each native plan keeps from Spark's off-heap pool for operators that cannot spill (an aggregate " +
      "above a spilling join, a sort's merge buffers), at most an eighth of what Spark grants when the plan starts " +
      "(it asks for 8 times this). Counted as the task's execution memory while the plan lives. 0 keeps none: " +
      "such an operator then fails when a spilling one in the same plan has taken the task's share."
  )

  val MEMORY_FLOAT: Entry[Long] = long(
    "spark.ember.memory.floatBytes",
    default = 1L << 20,
    "Memory a native plan's operators give back that the plan keeps (up to this, at most an eighth of what " +
      "Spark grants when the plan starts) for any of its operators, instead of returning it to Spark at once: " +
      "memory moving from one operator to another (a sort's batches into its merge) cannot be taken by another " +
      "task in between."
  )

  // --- Shuffled hash join ---

  val EXEC_SPILLING_HASH_JOIN: Entry[Boolean] = bool(
    "spark.ember.exec.spillingHashJoin.enabled",
    default = true,
    "Run `ShuffledHashJoinExec` natively (as `EmberSpillingHashJoinExec`): a hash join whose build side spills " +
      "to disk in hash buckets when Spark's off-heap pool refuses memory, instead of failing the task."
  )

  val STRINGS_AS_BYTES: Entry[Boolean] = bool(
    "spark.ember.strings.asBytes.enabled",
    default = true,
    "Carry Spark's strings as Arrow binary in native plans, so that strings holding bytes that are not valid " +
      "UTF-8 (which Spark allows, e.g. from `CAST(binary AS STRING)`) get Spark's answers: plans move, compare, " +
      "hash, group, join and sort the bytes, and a string function or cast runs natively over a batch of valid " +
      "UTF-8 and as Spark's own expression on the JVM over a batch holding invalid bytes. Off: every native plan " +
      "takes strings as UTF-8 and a task meeting invalid bytes fails, naming the column."
  )

  val EXEC_RANGE: Entry[Boolean] = bool(
    "spark.ember.exec.range.enabled",
    default = true,
    "Generate `spark.range` natively when a native operator reads it: each task gets its slice of the range " +
      "(Spark's own partitions and bounds) as three numbers instead of rows."
  )

  val PARQUET_SCAN_PUSHDOWN: Entry[Boolean] = bool(
    "spark.ember.parquetScan.pushdown.enabled",
    default = true,
    "In the native Parquet scan, use simple conjuncts of the scan's data filters (a column compared with " +
      "literals, IN, IS [NOT] NULL on integer, date, decimal and string columns) to skip row groups and pages " +
      "whose statistics prove that no row passes, and to filter rows inside the reader (see " +
      "spark.ember.parquetScan.rowFilter.enabled). Spark still applies every filter above the scan, so answers " +
      "never depend on it; the input's parquetRowGroupsPruned, parquetPagesPruned and parquetRowsSkipped " +
      "metrics count what was skipped."
  )

  val PARQUET_SCAN_ROW_FILTER: Entry[Boolean] = bool(
    "spark.ember.parquetScan.rowFilter.enabled",
    default = false,
    "With pushdown on, also filter rows inside the native Parquet reader: the filtered columns are decoded " +
      "first and the others only for the rows that pass. It costs a second decode of the filtered columns (Spark " +
      "still filters above the scan), so a row group where it keeps more than half of the rows, or passes them " +
      "in runs shorter than 32 rows, pauses it for the next 16 row groups. Off by default: it did not pay on " +
      "TPC-H (docs/benchmarks.md)."
  )

  val CACHE_ENABLED: Entry[Boolean] = bool(
    "spark.ember.cache.enabled",
    default = true,
    "Static (read when the application starts): the plugin sets `spark.sql.cache.serializer` to Ember's unless " +
      "the application sets one. Tables cached (`cache()`, `persist()`, `CACHE TABLE`) whose columns are all of " +
      "types the engine reads are kept as Arrow, one IPC stream per column per batch (its buffers LZ4-framed " +
      "when `spark.sql.inMemoryColumnarStorage.compressed`, as by default), with " +
      "Spark's per-batch statistics; native operators read them with no row conversion, Spark's operators as " +
      "Arrow-backed columnar batches. Other tables are cached by Spark's own serializer."
  )

  val EXEC_IN_MEMORY_SCAN: Entry[Boolean] = bool(
    "spark.ember.exec.inMemoryTableScan.enabled",
    default = true,
    "Read a cached table natively when a native operator consumes its scan and Ember's serializer cached it " +
      "(see `spark.ember.cache.enabled`): the batches Spark's statistics keep go to the engine as Arrow IPC, " +
      "only the selected columns."
  )

  val EXEC_PARQUET_SCAN: Entry[Boolean] = bool(
    "spark.ember.exec.parquetScan.enabled",
    default = true,
    "Read Parquet files natively when a native operator consumes a file scan: each task's files and byte ranges " +
      "(Spark's own splits) go to the engine, which reads them straight into Arrow, dates and timestamps " +
      "rebased as Spark does and partition values appended. Scans with metadata columns, nested types or " +
      "collated strings, timestamps with INT96 time-zone conversion, non-local files, " +
      "or ignoreCorruptFiles / ignoreMissingFiles / Parquet field ids stay Spark's vectorized reader (the plan " +
      "says why)."
  )

  val EXEC_BROADCAST_EXCHANGE: Entry[Boolean] = bool(
    "spark.ember.exec.broadcastExchange.enabled",
    default = true,
    "Run a hash join's `BroadcastExchangeExec` as `EmberBroadcastExchangeExec`: the child runs natively and its " +
      "rows are broadcast as Arrow IPC blocks (compressed by Spark's broadcast), which a native broadcast hash " +
      "join reads without a row conversion. A broadcast join left to Spark gets Spark's own relation, built on " +
      "the driver from the blocks."
  )

  val EXEC_BROADCAST_NESTED_LOOP_JOIN: Entry[Boolean] = bool(
    "spark.ember.exec.broadcastNestedLoopJoin.enabled",
    default = true,
    "Run `BroadcastNestedLoopJoinExec` natively (as `EmberBroadcastNestedLoopJoinExec`, the spilling hash join " +
      "over one constant key) when its join type does not preserve the build side (inner and cross joins; " +
      "left outer, semi, anti and existence joins building right; right outer joins building left); with it " +
      "off, Ember's broadcast exchange does not take a nested-loop join's broadcast either."
  )

  val EXEC_BROADCAST_HASH_JOIN: Entry[Boolean] = bool(
    "spark.ember.exec.broadcastHashJoin.enabled",
    default = true,
    "Run `BroadcastHashJoinExec` natively (as `EmberBroadcastHashJoinExec`, the spilling hash join over the " +
      "blocks of `EmberBroadcastExchangeExec`), null-aware anti joins (`NOT IN`) included; its hash table is " +
      "shared by the executor's tasks (see `spark.ember.exec.broadcastHashJoin.sharedBuild.enabled`)."
  )

  val BROADCAST_SHARED_BUILD: Entry[Boolean] = bool(
    "spark.ember.exec.broadcastHashJoin.sharedBuild.enabled",
    default = true,
    "Build a native broadcast join's hash table once per executor and probe it from all the executor's tasks " +
      "(as Spark's `HashedRelation`), its memory taken from Spark's off-heap storage memory once; when Spark " +
      "refuses it, or with this off, every task builds its own table under its own budget (and may spill)."
  )

  val BROADCAST_SHARED_BUILD_MAX_FRACTION: Entry[Double] = register(
    Entry[Double](
      "spark.ember.exec.broadcastHashJoin.sharedBuild.maxMemoryFraction",
      0.25,
      "Static (read on each executor): the share of `spark.memory.offHeap.size` that an executor's shared " +
        "broadcast hash tables may hold at once. A table lives as long as its broadcast value, which Spark " +
        "removes only once the driver has collected the broadcast, so without a bound the tables of finished " +
        "queries would starve execution memory in a long session; past it a join's tasks build their own " +
        "tables under their own budgets (and may spill).",
      _.trim.toDouble
    )
  )

  val EXEC_RANGE_SHUFFLE: Entry[Boolean] = bool(
    "spark.ember.exec.rangeShuffle.enabled",
    default = true,
    "Run range-partitioned `ShuffleExchangeExec`s (global ORDER BY) as Ember's columnar shuffle: Spark's own " +
      "`RangePartitioner` samples the bounds (running the native child once more, as Spark runs its child for " +
      "sampling), and the native writer routes each row by a binary search over them in Spark's order. Needs " +
      "`spark.ember.exec.shuffle.enabled`."
  )

  val EXEC_SHUFFLE: Entry[Boolean] = bool(
    "spark.ember.exec.shuffle.enabled",
    default = true,
    "Run hash-partitioned and single-partition `ShuffleExchangeExec`s as Ember's columnar shuffle " +
      "(`EmberShuffleExchangeExec`): rows are routed natively with Spark's own Murmur3 partitioning and cross " +
      "the shuffle as Arrow IPC blocks through Spark's shuffle manager (compression, spill, fetch and AQE as usual), " +
      "so native operators on both sides skip the row conversions. Round-robin and range exchanges stay in Spark."
  )

  val SHUFFLE_SPILL_BYTES: Entry[Long] = long(
    "spark.ember.shuffle.spillBytes",
    default = 256L << 20,
    "Input a native shuffle writer buffers (reserved from Spark's memory pool) before it spills the buffer to " +
      "disk even if the pool would grant more; 0: it spills only when the pool refuses. The map output is " +
      "written at the end of the task, partition after partition, into one file. The bound keeps memory for the " +
      "native operators below the writer in the same task (Spark cannot ask the writer to spill for them)."
  )

  val EXEC_REPLACE_SMJ: Entry[Boolean] = bool(
    "spark.ember.exec.replaceSortMergeJoin.enabled",
    default = true,
    "Run a `SortMergeJoinExec` as Ember's spilling hash join (its two sorts are dropped), building on the side " +
      "that statistics say is smaller where the join type allows it. Not where an operator above needs the " +
      "join's sort order, unless that operator is a sort-merge join replaced too. On by default: on TPC-H SF 1 " +
      "Ember's geometric mean is 3.32x vanilla with it and 3.09x without (docs/benchmarks.md), and the hash " +
      "join spills where a build side does not fit."
  )

  val SPILLING_HASH_JOIN_SPILL: Entry[Boolean] = bool(
    "spark.ember.spillingHashJoin.spill.enabled",
    default = true,
    "Let the native hash join spill its build side when memory is refused. When false, a build side that does " +
      "not fit fails the task with a memory error, as Spark's own hash join would."
  )

  val SPILLING_HASH_JOIN_MAX_BUILD_BUFFER: Entry[Long] = long(
    "spark.ember.spillingHashJoin.spill.maxBuildBufferBytes",
    default = 0,
    "Test knob: caps the memory one native hash join holds for its build side, so that it spills early " +
      "(0 = only Spark's off-heap pool limits it)."
  )

  val SPILLING_HASH_JOIN_BUCKET_BITS: Entry[Long] = long(
    "spark.ember.spillingHashJoin.bucketBits",
    default = engine.getSpillingHashJoinBucketBits.toLong,
    "Fan-out of the native hash join when it spills: 2^bits hash buckets per (re)split, 1..16."
  )

  val DYNAMIC_FILTER_ENABLED: Entry[Boolean] = bool(
    "spark.ember.dynamicFilter.enabled",
    default = false,
    "Partition-aware dynamic filters: a native hash join summarizes its build side's keys while building " +
      "(bounds, an exact set, a bloom filter beyond it) and drops probe rows whose keys cannot match before the " +
      "hash probe; under adaptive execution a shuffled join's build side summarizes its keys per reduce partition " +
      "in its shuffle writer, and the probe side's stage waits for them: its native Parquet scan skips row groups, " +
      "pages and rows outside the keys' bounds, its shuffle writer drops rows whose key is not among the build " +
      "keys of their partition. Only where that is exact: inner joins, semi joins, anti joins that output the build " +
      "side, and outer joins whose probe side is not preserved; never with null-safe (<=>) or floating-point keys."
  )

  val DYNAMIC_FILTER_IN_JOIN: Entry[Boolean] = bool(
    "spark.ember.dynamicFilter.inJoin.enabled",
    default = false,
    "With `spark.ember.dynamicFilter.enabled`: the native hash join also filters its own probe rows by its build " +
      "side's keys before probing. Off by default: summarizing every build side cost TPC-H SF 1 about 6% " +
      "(geometric mean) for no pruning there."
  )

  val DYNAMIC_FILTER_PROBE_SCANS: Entry[Boolean] = bool(
    "spark.ember.dynamicFilter.probeScans.enabled",
    default = true,
    "With `spark.ember.dynamicFilter.enabled`: a native hash join hands its build side's key bounds (and the keys " +
      "themselves when there are at most 16) to the native Parquet scans of its own task whose columns reach its " +
      "probe keys unchanged (a broadcast join over its streamed side's scan, a join of bucketed tables, joins " +
      "stacked on one scan); the join reads its build side first, and the scans skip row groups, pages and rows " +
      "outside them."
  )

  val DYNAMIC_FILTER_ACROSS_STAGES: Entry[Boolean] = bool(
    "spark.ember.dynamicFilter.acrossStages.enabled",
    default = true,
    "With `spark.ember.dynamicFilter.enabled` and adaptive execution: a shuffled join's build side summarizes its " +
      "keys in its shuffle writer, and the probe side's scan and shuffle writer drop what cannot match."
  )

  val DYNAMIC_FILTER_BUILD_SIDE_MAX_BYTES: Entry[Long] = long(
    "spark.ember.dynamicFilter.buildSideMaxBytes",
    default = 64L << 20,
    "Across stages: the most a join's build side may read (its scans' files) to be summarized for its probe " +
      "side, which must read at least four times as much."
  )

  val DYNAMIC_FILTER_MAX_SET_VALUES: Entry[Long] = long(
    "spark.ember.dynamicFilter.maxSetValues",
    default = 4096,
    "Distinct build keys a dynamic filter keeps exactly; beyond, it holds them in a bloom filter."
  )

  val DYNAMIC_FILTER_BLOOM_BYTES: Entry[Long] = long(
    "spark.ember.dynamicFilter.bloomBytes",
    default = 1L << 20,
    "Size of a dynamic filter's bloom filter (rounded to a power of two), reserved from the task's memory; " +
      "when the pool refuses it, the join runs unfiltered."
  )

  val DYNAMIC_FILTER_SAMPLE_ROWS: Entry[Long] = long(
    "spark.ember.dynamicFilter.sampleRows",
    default = 65536,
    "The cost gate: probe rows a join filters before it decides whether the dynamic filter pays."
  )

  val DYNAMIC_FILTER_MIN_PRUNED_FRACTION: Entry[Double] = register(
    Entry[Double](
      "spark.ember.dynamicFilter.minPrunedFraction",
      0.1,
      "The cost gate of a probe side's shuffle writer: it keeps filtering only if it dropped at least this " +
        "fraction of its first `spark.ember.dynamicFilter.sampleRows` rows (a dropped row is neither encoded, " +
        "written, fetched nor joined); below, it stops (metric `dynamic filter switched off`).",
      _.trim.toDouble
    )
  )

  val DYNAMIC_FILTER_IN_JOIN_MIN_PRUNED_FRACTION: Entry[Double] = register(
    Entry[Double](
      "spark.ember.dynamicFilter.inJoin.minPrunedFraction",
      0.5,
      "The cost gate inside a hash join: it keeps filtering its probe rows only if it dropped at least this " +
        "fraction of the first `spark.ember.dynamicFilter.sampleRows` (a dropped row saves only its hash probe, " +
        "which costs about what the filter's check does: TPC-H Q5 and Q9 ran 15-20% slower at 0.1).",
      _.trim.toDouble
    )
  )

  val JVM_EXPRESSIONS: Entry[Boolean] = bool(
    "spark.ember.expression.jvm.enabled",
    default = true,
    "In any native operator (projections, filters, aggregates, join keys and conditions, sort keys but a " +
      "top-k's, windows, expands, shuffle keys), evaluate an expression the engine has no kernel for (a Scala UDF, a rare " +
      "built-in) with Spark's own generated code inside the native plan, one JVM call per batch over the " +
      "columns it reads, instead of sending the whole operator back to Spark. Only deterministic expressions " +
      "without subqueries, over types Ember carries; explain lists them. Off: such an operator falls back."
  )

  val EXPRESSION_MAX_DEPTH: Entry[Long] = long(
    "spark.ember.expression.maxDepth",
    default = 64,
    "Deepest expression (levels of nested function calls, operators, CASE WHENs; a chain of ANDs or ORs counts " +
      "as a balanced tree of them, depth log2 of its length) an operator runs natively with. Native code " +
      "recurses once per level on the Spark task thread's stack, so an operator with a deeper expression stays " +
      "in Spark, and explain names this key as the reason. Raise it only with bigger task thread stacks."
  )

  val NATIVE_LOG_LEVEL: Entry[String] = string(
    "spark.ember.native.logLevel",
    default = "warn",
    "Level of the native engine's log (error, warn, info, debug, trace), written to the executor's stderr. " +
      "Read once per executor at start-up."
  )

  val NATIVE_LOG_CONFIG: Entry[String] = string(
    "spark.ember.native.logConfigFile",
    default = "",
    "A log4rs YAML file for the native engine's logging; when set it replaces spark.ember.native.logLevel. " +
      "Read once per executor at start-up."
  )

  def all: Seq[Entry[_]] = entries.toSeq

  /** `docs/configs.md`. */
  def markdown: String = {
    val sb = new StringBuilder
    sb ++= "# Ember configuration\n\n"
    sb ++= "Generated from `EmberConf` (spark/src/main/scala/org/ember/EmberConf.scala) by `make docs`; do not edit by hand.\n\n"
    sb ++= "| Key | Default | Meaning |\n|---|---|---|\n"
    all.foreach { e =>
      val former = e.formerKey.map(k => s" Formerly `$k` (still read).").getOrElse("")
      sb ++= s"| `${e.key}` | `${e.default}` | ${e.doc}$former |\n"
    }
    sb.toString
  }

}
