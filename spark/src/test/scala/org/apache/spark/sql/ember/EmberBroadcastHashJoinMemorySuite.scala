package org.apache.spark.sql.ember

import org.apache.spark.SparkConf
import org.apache.spark.sql.ember.execution.{EmberBroadcastExchangeExec, EmberBroadcastHashJoinExec}
import org.apache.spark.sql.functions._
import org.ember.EmberConf

/**
 * The native broadcast join under Spark's off-heap pool (here 32 MiB): a broadcast build side of several times
 * the budget completes (the per-task hash table spills in buckets), and with spilling turned off fails the task
 * with a message naming the key to raise, never a crash.
 */
class EmberBroadcastHashJoinMemorySuite extends EmberQueryTest {

  override protected def offHeapSize: String = "32m"

  override protected def sparkConf: SparkConf = super.sparkConf
    .set("spark.sql.shuffle.partitions", "1")
    .set("spark.sql.autoBroadcastJoinThreshold", "-1")
    .set("spark.sql.adaptive.enabled", "false")

  private val rows = 2000000L

  // Build: 2M distinct keys with two payload columns (~48 MB of Arrow data); probe: a permutation of the keys in
  // one partition, so the one task owns the whole budget and each probe row meets exactly one build row.
  private def build =
    spark.range(0, rows, 1, 2).select(col("id").as("k"), col("id").as("b1"), (col("id") * 3).as("b2"))
  private def probe =
    spark.range(0, rows, 1, 1).select(((col("id") * 7919) % rows).as("pk"), col("id").as("p1"))

  test("a broadcast join whose build side is several times the off-heap budget completes") {
    withEmber(enabled = true) {
      val df = probe
        .join(broadcast(build), col("pk") === col("k"))
        .agg(count(lit(1)).as("n"), sum(col("b2") - col("k") * 3).as("zero"), sum(col("p1")).as("s"))
      val row = df.collect().head
      assert(row.getLong(0) == rows)
      assert(row.getLong(1) == 0L, "every probe row met its own build row")
      assert(row.getLong(2) == rows * (rows - 1) / 2)
      val plan = df.queryExecution.executedPlan
      val joins = collectWithSubqueries(plan) { case j: EmberBroadcastHashJoinExec => j }
      assert(joins.nonEmpty, plan)
      assert(collectWithSubqueries(plan) { case e: EmberBroadcastExchangeExec => e }.nonEmpty, plan)
      assert(joins.map(_.metrics("build_rows").value).sum == rows)
      assert(joins.map(_.metrics("spilled_buckets").value).sum > 0, "the join must have spilled")
    }
    assertNoNativeMemoryHeld()
  }

  test("with spilling disabled the same join fails with a message naming the key to raise") {
    withSQLConf(EmberConf.SPILLING_HASH_JOIN_SPILL.key -> "false") {
      val df = probe.join(broadcast(build), col("pk") === col("k")).agg(count(lit(1)))
      val e = intercept[Exception](df.collect())
      val messages = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).map(_.toString).toSeq
      assert(messages.exists(_.contains("spark.memory.offHeap.size")), messages.mkString("\n"))
    }
    assertNoNativeMemoryHeld()
  }
}
