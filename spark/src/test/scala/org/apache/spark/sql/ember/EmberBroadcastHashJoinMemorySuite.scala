package org.apache.spark.sql.ember

import org.apache.spark.sql.ember.execution.{EmberBroadcastExchangeExec, EmberBroadcastHashJoinExec}
import org.apache.spark.sql.functions._
import org.ember.EmberConf

/**
 * The native broadcast join under Spark's off-heap pool (here 32 MiB): a broadcast build side of several times
 * the budget completes (the per-task hash table spills in buckets), and with spilling turned off fails the task
 * with a message naming the key to raise, never a crash.
 */
class EmberBroadcastHashJoinMemorySuite extends EmberJoinMemorySuiteBase {

  // Build: 2M distinct keys (~48 MB of Arrow data); the probe in one partition, so one task owns the budget.
  override protected val rows = 2000000L
  override protected val probePartitions = 1

  test("a broadcast join whose build side is several times the off-heap budget completes") {
    withEmber(enabled = true) {
      val df = joinAndCheckTotals(broadcast(build))
      val plan = df.queryExecution.executedPlan
      val joins = collectWithSubqueries(plan) { case j: EmberBroadcastHashJoinExec => j }
      assert(joins.nonEmpty, plan)
      assert(collectWithSubqueries(plan) { case e: EmberBroadcastExchangeExec => e }.nonEmpty, plan)
      assert(joins.map(_.metrics("build_rows").value).sum == rows)
      assert(joins.map(_.metrics("spilled_buckets").value).sum > 0, "the join must have spilled")
    }
    assertNothingLeft()
  }

  test("with spilling disabled the same join fails with a message naming the key to raise") {
    withSQLConf(EmberConf.SPILLING_HASH_JOIN_SPILL.key -> "false") {
      val df = probe.join(broadcast(build), col("pk") === col("k")).agg(count(lit(1)))
      val messages = causeMessages(intercept[Exception](df.collect()))
      assert(messages.exists(_.contains("spark.memory.offHeap.size")), messages.mkString("\n"))
    }
    assertNothingLeft()
  }
}
