package org.apache.spark.sql.ember

import org.apache.spark.TaskKilled
import org.apache.spark.scheduler.{SparkListener, SparkListenerTaskEnd}
import org.apache.spark.sql.catalyst.expressions.aggregate.Partial
import org.apache.spark.sql.ember.execution.{EmberAggregateExec, EmberSortExec, NativePlanIterator}
import org.apache.spark.sql.ember.memory.NativeMemoryConsumer
import org.apache.spark.sql.functions._
import org.scalatest.concurrent.Eventually._
import org.scalatest.time.SpanSugar._

/**
 * Native memory comes from Spark's off-heap pool (here 32 MiB): a sort of ~10x that completes by spilling, an
 * aggregate of ~10x that completes, and a failed task or a job cancelled while its sort spills leaves no
 * reserved memory and no spill files.
 */
class EmberMemorySuite extends EmberMemorySuiteBase {

  // A merge of many spill files needs its reservation: 8 MiB of each task's ~16 MiB share.
  override protected def sparkConf: org.apache.spark.SparkConf =
    super.sparkConf.set("spark.ember.sort.spillReservationBytes", (8L << 20).toString)

  // One partition: the task owns the whole off-heap budget, so the test does not depend on how two concurrent
  // tasks happen to split it (see docs/tuning.md on merges under concurrent tasks).
  private def bigTable(rows: Long) = spark
    .range(0, rows, 1, 1)
    .select(
      (col("id") * 7919 % rows).as("k"),
      col("id").as("v"),
      concat(lit("payload-"), (col("id") % 100000).cast("string")).as("s")
    )

  test("a sort of ~10x the off-heap budget completes by spilling") {
    val rows = 8000000L // ~330 MB as Arrow batches, against 32 MiB of off-heap memory
    withEmber(enabled = true) {
      val df = bigTable(rows).sortWithinPartitions("k")
      val plan = df.queryExecution.executedPlan
      val counts = plan
        .execute()
        .mapPartitions { it =>
          var n = 0L
          var prev = Long.MinValue
          var sorted = true
          it.foreach { r =>
            val k = r.getLong(0)
            if (k < prev) sorted = false
            prev = k
            n += 1
          }
          Iterator((n, sorted))
        }
        .collect()
      assert(counts.map(_._1).sum == rows)
      assert(counts.forall(_._2), "every partition sorted")
      val sorts = collectWithSubqueries(plan) { case s: EmberSortExec => s }
      assert(sorts.nonEmpty, plan.toString)
      assert(sorts.map(_.metrics("spillCount").value).sum > 0, "the sort must have spilled")
      assert(sorts.map(_.metrics("peakMemory").value).max > 0, "peak reserved memory is reported")
    }
    assertNothingLeft()
  }

  test(
    "an aggregate of ~10x the off-heap budget completes with Spark's totals; the partial emits early, the final spills"
  ) {
    val rows = 4000000L // 4M distinct keys: ~10x the 32 MiB budget as hash-table state, in partial and final
    withEmber(enabled = true) {
      withSQLConf("spark.ember.aggregate.adaptivePartial.enabled" -> "false") {
        val df = bigTable(rows).groupBy("k").agg(sum("v").as("sv"), count(lit(1)).as("c"), max("s").as("ms"))
        val totalsDf = df.agg(count(lit(1)), sum("sv"), sum("c"))
        val totals = totalsDf.collect().head
        assert(totals.getLong(0) == rows)
        assert(totals.getLong(1) == rows * (rows - 1) / 2)
        assert(totals.getLong(2) == rows)
        val aggs = executedNodes(totalsDf).collect {
          case a: EmberAggregateExec if a.groupingExpressions.nonEmpty => a
        }
        assert(aggs.size == 2, totalsDf.queryExecution.executedPlan)
        val (partial, fin) = aggs.partition(_.aggregateExpressions.exists(_.mode == Partial))
        assert(partial.map(_.metrics("memory_emits").value).sum > 0, "the partial must have emitted early")
        // The final (the radix-partitioned merge, under the projection of Spark's result expressions) spills
        // whole partitions of its hash table.
        assert(fin.nonEmpty)
        assert(fin.map(_.metrics("spillCount").value).sum > 0, "the final aggregate must have spilled")
        assert(fin.map(_.metrics("spilled_partitions").value).sum > 0, "spilled as hash table partitions")
      }
    }
    assertNothingLeft()
  }

  test("a failing task releases native memory and deletes spill files") {
    withEmber(enabled = true) {
      val df = bigTable(3000000L).sortWithinPartitions("k")
      val rdd = df.queryExecution.executedPlan.execute().mapPartitions { it =>
        // Read a little of the (spilled) sorted output, then fail as a killed or broken task would.
        it.take(10).foreach(_ => ())
        throw new IllegalStateException("boom")
      }
      val e = intercept[Exception](rdd.collect())
      assert(e.getMessage.contains("boom"))
    }
    // The job fails as soon as one task fails; the other task is being killed meanwhile.
    eventually(timeout(60.seconds), interval(200.millis)) {
      assert(NativeMemoryConsumer.outstanding.get() == 0, "native memory returned after task failure")
      assert(spillDirs().isEmpty, s"spill files left behind: ${spillDirs()}")
    }
  }
  test("cancelling the job group while the native sort spills releases its memory and spill files") {
    withEmber(enabled = true) {
      val df = bigTable(4000000L).sortWithinPartitions("k")
      val rdd = df.queryExecution.executedPlan.execute().mapPartitions(it => Iterator(it.size))
      val group = "ember-cancel-mid-spill"
      val killed = new java.util.concurrent.atomic.AtomicInteger()
      val listener = new SparkListener {
        override def onTaskEnd(end: SparkListenerTaskEnd): Unit =
          if (end.reason.isInstanceOf[TaskKilled]) killed.incrementAndGet()
      }
      spark.sparkContext.addSparkListener(listener)
      val job = new Thread(() => {
        spark.sparkContext.setJobGroup(group, "killed while spilling", interruptOnCancel = false)
        try rdd.collect()
        finally spark.sparkContext.clearJobGroup()
      })
      @volatile var failure: Throwable = null
      job.setUncaughtExceptionHandler((_, e) => failure = e)
      job.start()
      // The sort is spilling once DataFusion has made its spill directory under Spark's local dirs.
      eventually(timeout(120.seconds), interval(20.millis)) {
        assert(spillDirs().nonEmpty, "the sort has not started spilling")
      }
      assert(job.isAlive, "the job ended before it was cancelled")
      assert(NativeMemoryConsumer.outstanding.get() > 0, "the spilling sort holds native memory")
      spark.sparkContext.cancelJobGroup(group)
      job.join(120000)
      assert(!job.isAlive, "the cancelled job did not end")
      assert(
        failure != null && failure.getMessage.contains("cancelled"),
        s"the job must fail as cancelled: $failure"
      )
      // The task was killed, not left to finish its sort.
      eventually(timeout(60.seconds), interval(100.millis))(assert(killed.get() == 1, "one task killed"))
      spark.sparkContext.removeSparkListener(listener)
    }
    eventually(timeout(60.seconds), interval(100.millis)) {
      assert(NativeMemoryConsumer.outstanding.get() == 0, "native memory returned after the kill")
      assert(NativePlanIterator.arrowLeaks.get() == 0, "no Arrow buffer leaked")
      assert(spillDirs().isEmpty, s"spill files left behind: ${spillDirs()}")
    }
  }
}
