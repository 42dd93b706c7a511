package org.apache.spark.sql.ember

import java.io.File

import org.apache.spark.{SparkConf, SparkEnv}
import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.functions._

/**
 * The memory suites' common set-up: a small off-heap budget (32 MiB unless overridden), the spill directories
 * DataFusion makes under Spark's local dirs, and the check that a query left no native memory reserved and no
 * spill file behind.
 */
abstract class EmberMemorySuiteBase extends EmberQueryTest {

  override protected def offHeapSize: String = "32m"

  /** DataFusion's spill directories under Spark's local dirs (made at a plan's first spill). */
  protected def spillDirs(): Seq[File] = {
    val local = SparkEnv.get.blockManager.diskBlockManager.localDirs.toSeq
    local.flatMap(d => Option(d.listFiles()).toSeq.flatten).filter(_.getName.startsWith("datafusion-"))
  }

  /** No native memory reserved, no Arrow buffer leaked and no spill file left. */
  protected def assertNothingLeft(): Unit = {
    assertNoNativeMemoryHeld()
    assert(spillDirs().isEmpty, s"spill files left behind: ${spillDirs()}")
  }

  /** The messages of an exception and its causes, outermost first. */
  protected def causeMessages(e: Throwable): Seq[String] =
    Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).map(_.toString).toSeq
}

/**
 * A join of `rows` distinct build keys (with two payload columns) and a probe side that is a permutation of the
 * same keys, so each probe row meets exactly one build row; one shuffle partition, so the task owns the whole
 * budget.
 */
abstract class EmberJoinMemorySuiteBase extends EmberMemorySuiteBase {

  override protected def sparkConf: SparkConf = super.sparkConf
    .set("spark.sql.shuffle.partitions", "1")
    .set("spark.sql.autoBroadcastJoinThreshold", "-1")
    .set("spark.sql.adaptive.enabled", "false")

  protected def rows: Long

  /** The probe side's partitions. */
  protected def probePartitions: Int

  protected def build: DataFrame =
    spark.range(0, rows, 1, 2).select(col("id").as("k"), col("id").as("b1"), (col("id") * 3).as("b2"))

  protected def probe: DataFrame =
    spark.range(0, rows, 1, probePartitions).select(((col("id") * 7919) % rows).as("pk"), col("id").as("p1"))

  /** Joins probe and `buildSide` and checks the totals every row meeting its own build row gives. */
  protected def joinAndCheckTotals(buildSide: DataFrame): DataFrame = {
    val df = probe
      .join(buildSide, col("pk") === col("k"))
      .agg(count(lit(1)).as("n"), sum(col("b2") - col("k") * 3).as("zero"), sum(col("p1")).as("s"))
    val row = df.collect().head
    assert(row.getLong(0) == rows)
    assert(row.getLong(1) == 0L, "every probe row met its own build row")
    assert(row.getLong(2) == rows * (rows - 1) / 2)
    df
  }
}
