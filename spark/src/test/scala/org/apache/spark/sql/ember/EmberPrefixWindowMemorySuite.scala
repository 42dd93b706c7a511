package org.apache.spark.sql.ember

import org.apache.spark.sql.ember.execution.EmberPrefixWindowExec
import org.apache.spark.sql.expressions.Window
import org.apache.spark.sql.functions._

/**
 * A native window over one partition ~10x the off-heap budget (16 MiB): bounded specs are evaluated in segments
 * (carried running sums, extrema and ranks), whole-partition aggregates spill the partition and fold while it is
 * written, so the query completes with Spark's answer.
 */
class EmberPrefixWindowMemorySuite extends EmberMemorySuiteBase {

  override protected def offHeapSize: String = "16m"

  test("a window partition of ~10x the off-heap budget completes in segments with Spark's answer") {
    val rows = 4000000L // ~130 MB of input columns as Arrow, ~1 GB with the scratch of a whole-partition pass
    def query = {
      // ROWS frames and row_number over the unique id (deterministic); RANGE and dense_rank over t with ties.
      val w = Window.partitionBy("k").orderBy("id")
      val peers = Window.partitionBy("k").orderBy("t")
      val data = spark
        .range(0, rows, 1, 2)
        .select(
          col("id"),
          lit(1).as("k"),
          (col("id") / 3).cast("long").as("t"), // ties: peer groups of 3 rows
          (col("id") * 7919 % 1000 - 500).as("v")
        )
      data
        .select(
          sum("v").over(w.rowsBetween(Window.unboundedPreceding, Window.currentRow)).as("run"),
          avg("v").over(w.rowsBetween(-10, 5)).as("a"),
          max("v").over(peers).as("mx"), // RANGE UNBOUNDED PRECEDING AND CURRENT ROW
          row_number().over(w).as("rn"),
          dense_rank().over(peers).as("dr"),
          lag("v", 3).over(w).as("lg")
        )
        .agg(
          count(lit(1)),
          max("run"),
          min("run"),
          sum(col("run") % 1000),
          sum(floor(col("a") * 1000)),
          sum("mx"),
          sum("rn"),
          sum("dr"),
          max("dr"),
          sum("lg"),
          count("lg")
        )
    }
    val df = checkSparkAnswerAndNative(query, Seq(classOf[EmberPrefixWindowExec]))
    val windows = collectWithSubqueries(df.queryExecution.executedPlan) { case w: EmberPrefixWindowExec => w }
    assert(windows.size == 2, df.queryExecution.executedPlan)
    windows.foreach { w =>
      assert(w.metrics("segmented_partitions").value == 1, s"the partition in segments: $w")
      assert(w.metrics("window_segments").value >= rows / 16384, s"many segments: $w")
    }
  }

  test("whole-partition aggregates over a partition of ~10x the off-heap budget spill with Spark's answer") {
    val rows = 4000000L
    // Doubles that are multiples of 1/8: their sums are exact, so the row order within the partition (which the
    // shuffle does not fix) cannot change a bit.
    def data = spark
      .range(0, rows, 1, 2)
      .select(
        col("id"),
        (col("id") / rows).cast("int").as("k"), // 0 everywhere, but not a literal the optimizer drops
        (col("id") * 7919 % 1000 - 500).as("v"),
        ((col("id") * 7919 % 1000) / 8.0).as("f")
      )
    val byK = Window.partitionBy("k")
    // One window per query: two windows stacked in one native block share the budget, and the upper one holds
    // what it reserved until the pool refuses it, which can starve the lower one (see docs/compatibility.md).
    def byKQuery = data
      .select(
        col("v"),
        sum("v").over(byK).as("s"),
        avg("f").over(byK).as("af"),
        count("v").over(byK).as("c"),
        max("f").over(byK).as("mx")
      )
      .agg(count(lit(1)), sum("v"), min("s"), max("s"), max("af"), sum("c"), max("mx"))
    def overAllQuery = data
      .select(
        col("v"),
        sum("f").over(Window.partitionBy()).as("sf"),
        min("v").over(Window.partitionBy()).as("mn"),
        avg("v").over(Window.partitionBy()).as("av")
      )
      .agg(count(lit(1)), sum("v"), min("sf"), max("sf"), min("mn"), max("av"))
    val dfs = Seq(
      checkSparkAnswerAndNative(byKQuery, Seq(classOf[EmberPrefixWindowExec])),
      checkSparkAnswerAndNative(overAllQuery, Seq(classOf[EmberPrefixWindowExec]))
    )
    for (df <- dfs) {
      val windows = collectWithSubqueries(df.queryExecution.executedPlan) { case w: EmberPrefixWindowExec =>
        w
      }
      assert(windows.size == 1, df.queryExecution.executedPlan)
      windows.foreach { w =>
        assert(w.metrics("spilled_partitions").value == 1, s"the partition spilled: $w")
        assert(w.metrics("spilledBytes").value > 0, s"spilled bytes: $w")
      }
    }
  }
}
