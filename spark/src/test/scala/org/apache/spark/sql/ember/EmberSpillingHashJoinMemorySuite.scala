package org.apache.spark.sql.ember

import java.io.File

import org.apache.spark.{SparkConf, SparkEnv}
import org.apache.spark.sql.ember.execution.EmberSpillingHashJoinExec
import org.apache.spark.sql.functions._
import org.ember.EmberConf

/**
 * The native hash join under Spark's off-heap pool (here 32 MiB), with no test cap: a build side of ~10x the
 * budget completes by spilling, where spilling turned off fails the task.
 */
class EmberSpillingHashJoinMemorySuite extends EmberQueryTest {

  override protected def offHeapSize: String = "32m"

  // One shuffle partition: the task owns the whole budget (see EmberMemorySuite).
  override protected def sparkConf: SparkConf = super.sparkConf
    .set("spark.sql.shuffle.partitions", "1")
    .set("spark.sql.autoBroadcastJoinThreshold", "-1")
    .set("spark.sql.adaptive.enabled", "false")

  private val rows = 4000000L

  // Build: 4M distinct keys with two payload columns (~96 MB of Arrow data, ~190 MB as hash join cost);
  // probe: a permutation of the same keys, so each probe row meets exactly one build row.
  private def build =
    spark.range(0, rows, 1, 2).select(col("id").as("k"), col("id").as("b1"), (col("id") * 3).as("b2"))
  private def probe =
    spark.range(0, rows, 1, 2).select(((col("id") * 7919) % rows).as("pk"), col("id").as("p1"))

  private def spillDirs(): Seq[File] = {
    val local = SparkEnv.get.blockManager.diskBlockManager.localDirs.toSeq
    local.flatMap(d => Option(d.listFiles()).toSeq.flatten).filter(_.getName.startsWith("datafusion-"))
  }

  test("a join whose build side is ~10x the off-heap budget completes by spilling") {
    withEmber(enabled = true) {
      val df = probe
        .join(build.hint("shuffle_hash"), col("pk") === col("k"))
        .agg(count(lit(1)).as("n"), sum(col("b2") - col("k") * 3).as("zero"), sum(col("p1")).as("s"))
      val row = df.collect().head
      assert(row.getLong(0) == rows)
      assert(row.getLong(1) == 0L, "every probe row met its own build row")
      assert(row.getLong(2) == rows * (rows - 1) / 2)
      val joins = collectWithSubqueries(df.queryExecution.executedPlan) { case j: EmberSpillingHashJoinExec =>
        j
      }
      assert(joins.nonEmpty, df.queryExecution.executedPlan)
      assert(joins.map(_.metrics("spilled_buckets").value).sum > 0, "the join must have spilled")
      assert(joins.map(_.metrics("build_rows").value).sum == rows)
      assert(joins.map(_.metrics("spilledBytes").value).sum > 0)
    }
    assertNoNativeMemoryHeld()
    assert(spillDirs().isEmpty, s"spill files left behind: ${spillDirs()}")
  }

  test("with spilling disabled the same join fails cleanly for lack of memory") {
    withSQLConf(EmberConf.SPILLING_HASH_JOIN_SPILL.key -> "false") {
      val df = probe.join(build.hint("shuffle_hash"), col("pk") === col("k")).agg(count(lit(1)))
      val e = intercept[Exception](df.collect())
      val messages = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).map(_.toString).toSeq
      assert(messages.exists(_.contains("spilling is disabled")), messages.mkString("\n"))
    }
    assertNoNativeMemoryHeld()
    assert(spillDirs().isEmpty, s"spill files left behind: ${spillDirs()}")
  }
}
