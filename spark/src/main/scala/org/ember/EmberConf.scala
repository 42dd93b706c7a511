package org.ember

import org.apache.spark.sql.internal.SQLConf

/**
 * Every Ember configuration key, with its default and what a user sees change. `docs/configs.md` is
 * generated from this registry (`make docs`); `EmberConfDocsSuite` keeps the two in sync.
 */
object EmberConf {

  final case class Entry[T](key: String, default: T, doc: String, parse: String => T) {

    /** The value in the current session (SQL conf), read at planning time on the driver. */
    def get(conf: SQLConf = SQLConf.get): T =
      Option(conf.getConfString(key, null)).map(parse).getOrElse(default)

    /** The value in a SparkConf-like lookup (executor start-up, static keys). */
    def get(lookup: String => Option[String]): T = lookup(key).map(parse).getOrElse(default)
  }

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

  val EXEC_SORT: Entry[Boolean] = bool(
    "spark.ember.exec.sort.enabled",
    default = true,
    "Run `SortExec` natively (as `EmberSortExec`, DataFusion's sort, which spills under Spark's memory pool)."
  )

  val EXEC_LIMIT: Entry[Boolean] = bool(
    "spark.ember.exec.limit.enabled",
    default = true,
    "Run `LocalLimitExec` and `GlobalLimitExec` natively (as `EmberLocalLimitExec` / `EmberGlobalLimitExec`)."
  )

  val EXPLAIN_FALLBACK: Entry[Boolean] = bool(
    "spark.ember.explainFallback.enabled",
    default = false,
    "Log, once per planned query, every operator that stayed in Spark and why. The reasons also appear in " +
      "`EXPLAIN EXTENDED`/`FORMATTED` output when `spark.sql.extendedExplainProviders` includes " +
      "`org.ember.EmberExplainInfo`."
  )

  val BATCH_SIZE: Entry[Long] = long(
    "spark.ember.batchSize",
    default = 8192,
    "Rows per Arrow batch between Spark and the native engine, and inside it."
  )

  val SPILL_COMPRESSION: Entry[String] = string(
    "spark.ember.spill.compression",
    default = "lz4",
    "Compression of native spill files (Arrow IPC): `lz4` or `none`."
  )

  val SORT_SPILL_RESERVATION: Entry[Long] = long(
    "spark.ember.sort.spillReservationBytes",
    default = 0,
    "Memory a native sort sets aside up front for merging its spill files; 0 keeps DataFusion's default " +
      "(10 MiB). Lower it only for very small off-heap budgets."
  )

  // --- Shuffled hash join (issue 3) ---

  val EXEC_SHUFFLED_HASH_JOIN: Entry[Boolean] = bool(
    "spark.ember.exec.shuffledHashJoin.enabled",
    default = true,
    "Run `ShuffledHashJoinExec` natively (as `EmberShuffledHashJoinExec`): a hash join whose build side spills " +
      "to disk in hash buckets when Spark's off-heap pool refuses memory, instead of failing the task."
  )

  val EXEC_REPLACE_SMJ: Entry[Boolean] = bool(
    "spark.ember.exec.replaceSortMergeJoin.enabled",
    default = false,
    "Run a `SortMergeJoinExec` as Ember's spilling hash join (its two sorts are dropped), building on the side " +
      "that statistics say is smaller where the join type allows it. Not where an operator above needs the " +
      "join's sort order. Off by default until the release benchmark (dev/bench/join.py) decides."
  )

  val HASH_JOIN_SPILL: Entry[Boolean] = bool(
    "spark.ember.hashJoin.spill.enabled",
    default = true,
    "Let the native hash join spill its build side when memory is refused. When false, a build side that does " +
      "not fit fails the task with a memory error, as Spark's own hash join would."
  )

  val HASH_JOIN_MAX_BUILD_BUFFER: Entry[Long] = long(
    "spark.ember.hashJoin.spill.maxBuildBufferBytes",
    default = 0,
    "Test knob: caps the memory one native hash join holds for its build side, so that it spills early " +
      "(0 = only Spark's off-heap pool limits it)."
  )

  val HASH_JOIN_BUCKET_BITS: Entry[Long] = long(
    "spark.ember.hashJoin.bucketBits",
    default = 4,
    "Fan-out of the native hash join when it spills: 2^bits hash buckets per (re)split, 1..16."
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
      sb ++= s"| `${e.key}` | `${e.default}` | ${e.doc} |\n"
    }
    sb.toString
  }

}
