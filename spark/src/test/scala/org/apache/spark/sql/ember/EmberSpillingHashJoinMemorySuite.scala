package org.apache.spark.sql.ember

import org.apache.spark.sql.ember.execution.EmberSpillingHashJoinExec
import org.apache.spark.sql.functions._
import org.ember.EmberConf

/**
 * The native hash join under Spark's off-heap pool (here 32 MiB), with no test cap: a build side of ~10x the
 * budget completes by spilling, where spilling turned off fails the task.
 */
class EmberSpillingHashJoinMemorySuite extends EmberJoinMemorySuiteBase {

  // Build: 4M distinct keys (~96 MB of Arrow data, ~190 MB as hash join cost).
  override protected val rows = 4000000L
  override protected val probePartitions = 2

  test("a join whose build side is ~10x the off-heap budget completes by spilling") {
    withEmber(enabled = true) {
      val df = joinAndCheckTotals(build.hint("shuffle_hash"))
      val joins = collectWithSubqueries(df.queryExecution.executedPlan) { case j: EmberSpillingHashJoinExec =>
        j
      }
      assert(joins.nonEmpty, df.queryExecution.executedPlan)
      assert(joins.map(_.metrics("spilled_buckets").value).sum > 0, "the join must have spilled")
      assert(joins.map(_.metrics("build_rows").value).sum == rows)
      assert(joins.map(_.metrics("spilledBytes").value).sum > 0)
    }
    assertNothingLeft()
  }

  test("with spilling disabled the same join fails cleanly for lack of memory") {
    withSQLConf(EmberConf.SPILLING_HASH_JOIN_SPILL.key -> "false") {
      val df = probe.join(build.hint("shuffle_hash"), col("pk") === col("k")).agg(count(lit(1)))
      val messages = causeMessages(intercept[Exception](df.collect()))
      assert(messages.exists(_.contains("spilling is disabled")), messages.mkString("\n"))
    }
    assertNothingLeft()
  }
}
