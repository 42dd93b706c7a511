package org.apache.spark.sql.ember

import org.apache.spark.sql.catalyst.plans.physical.RangePartitioning
import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf

/**
 * Global ORDER BY over Ember's range shuffle (bounds from Spark's own RangePartitioner, rows routed natively),
 * Ember off vs on: the rows in order and, where the sample is the whole input (so Spark's bounds do not depend on
 * its random seed), every row's partition.
 */
class EmberRangeShuffleSuite extends EmberQueryTest {

  private def rangeExchanges(df: DataFrame): Seq[EmberShuffleExchangeExec] =
    executedNodes(df).collect {
      case e: EmberShuffleExchangeExec if e.outputPartitioning.isInstanceOf[RangePartitioning] => e
    }

  private def assertNative(df: DataFrame): Unit = {
    assert(rangeExchanges(df).nonEmpty, s"no native range shuffle in\n${df.queryExecution.executedPlan}")
    assert(
      !executedNodes(df).exists {
        case s: ShuffleExchangeExec => s.outputPartitioning.isInstanceOf[RangePartitioning]
        case _ => false
      },
      s"a range exchange left in Spark:\n${df.queryExecution.executedPlan}"
    )
  }

  /** Rows with their partition: AQE coalescing (by bytes, which differ between the two shuffles) is off. */
  private def withPartitions(f: => Unit): Unit =
    Seq(true, false).foreach { aqe =>
      withSQLConf(
        SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> aqe.toString,
        SQLConf.COALESCE_PARTITIONS_ENABLED.key -> "false"
      )(f)
    }

  test("global sort: every orderable type, both directions, nulls first and last") {
    val data = DataGen.table(spark, 1500, partitions = 4).cache()
    Seq(true, false).foreach { aqe =>
      withSQLConf(SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> aqe.toString) {
        for ((c, i) <- Seq("i32", "i64", "f32", "f64", "dec38", "s", "bin", "dt", "ts", "b").zipWithIndex) {
          val key = if (i % 2 == 0) col(c).asc_nulls_first else col(c).desc_nulls_last
          val df = checkSparkAnswerAndNative(
            data.orderBy(key, col("id")).select(col("id"), col(c)),
            Seq(cls[EmberSortExec]),
            ordered = true
          )
          assertNative(df)
        }
      }
    }
  }

  test("partition contents: every row in Spark's partition (nulls, NaN, -0.0, skew, many partitions)") {
    // 4 input partitions of <= 250 rows: Spark samples every row, so its bounds are the same in both runs.
    val base = spark
      .range(0, 1000, 1, 4)
      .select(
        col("id"),
        when(col("id") % 10 =!= 0, lit(7L)).otherwise(col("id")).as("skew"),
        when(col("id") % 13 === 0, lit(null))
          .when(col("id") % 11 === 0, lit(Double.NaN))
          .when(col("id") % 7 === 0, lit(-0.0))
          .when(col("id") % 5 === 0, lit(0.0))
          .otherwise(col("id") * 0.37 - 100)
          .as("d"),
        when(col("id") % 17 === 0, lit(null))
          .otherwise(concat(lit("k"), (col("id") % 97).cast("string")))
          .as("s")
      )
    withPartitions {
      for (
        (order, parts) <- Seq(
          (Seq(col("skew"), col("id")), "4"),
          (Seq(col("d").desc_nulls_last, col("id")), "4"),
          (Seq(col("d").asc_nulls_first, col("id").desc), "7"),
          (Seq(col("s"), col("id")), "4"),
          (Seq(col("skew").desc), "50"),
          (Seq(col("d")), "1")
        )
      ) withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> parts) {
        val df = checkSparkAnswerAndNative(
          base.orderBy(order: _*).withColumn("pid", spark_partition_id()),
          Seq(cls[EmberSortExec]),
          ordered = order.size > 1
        )
        if (parts != "1") assertNative(df)
      }
    }
  }

  test("empty input and a single key value") {
    withPartitions {
      val empty = spark.range(0, 100, 1, 3).where(col("id") < 0).select(col("id"), (col("id") % 3).as("k"))
      checkSparkAnswerAndNative(empty.orderBy(col("k"), col("id")), Seq(cls[EmberSortExec]), ordered = true)
      val one = spark.range(0, 300, 1, 3).select(col("id"), lit(5L).as("k"))
      checkSparkAnswerAndNative(
        one.orderBy(col("k")).withColumn("pid", spark_partition_id()),
        Seq(cls[EmberSortExec])
      )
    }
  }

  test("range shuffle falls back when disabled") {
    withSQLConf("spark.ember.exec.rangeShuffle.enabled" -> "false") {
      val df = spark.range(0, 100, 1, 3).toDF().orderBy(col("id").desc)
      df.collect()
      assert(rangeExchanges(df).isEmpty)
    }
  }
}
