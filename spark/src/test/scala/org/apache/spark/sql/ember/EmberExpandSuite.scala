package org.apache.spark.sql.ember

import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.execution.ExpandExec
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.functions._
import org.ember.EmberExplainInfo

/** Grouping sets, ROLLUP, CUBE and several DISTINCT aggregates: Spark's Expand run natively, Ember off vs on. */
class EmberExpandSuite extends EmberQueryTest {

  // Sums over int columns: DataGen's BIGINT extremes overflow a sum under ANSI (an error both sides raise).
  private lazy val data: DataFrame = DataGen.table(spark, 3000).cache()
  private lazy val empty: DataFrame = DataGen.table(spark, 0).cache()

  private val expandAndAggregate = Seq(cls[EmberExpandExec], cls[EmberAggregateExec])

  test("rollup and cube over keys of several types, with grouping_id") {
    bothAnsiModes { _ =>
      checkSparkAnswerAndNative(
        data
          .rollup("s", "i32", "dt")
          .agg(sum("i32"), count(lit(1)), min("f64"), max("dec38"), grouping_id()),
        expandAndAggregate
      )
      checkSparkAnswerAndNative(
        data.cube("b", "i8", "ts").agg(avg("dec"), max("i16"), count("f32"), grouping_id()),
        expandAndAggregate
      )
    }
  }

  test("grouping sets in SQL, the empty set and grouping() included") {
    data.createOrReplaceTempView("expand_t")
    def q = spark
      .sql(
        """SELECT i16, s, ntz, grouping(s) AS gs, sum(f64), count(*) FROM expand_t
          |GROUP BY GROUPING SETS ((i16, s), (ntz), ())""".stripMargin
      )
      .asInstanceOf[DataFrame]
    checkSparkAnswerAndNative(q, expandAndAggregate)
  }

  test("several DISTINCT aggregates, with a non-distinct one beside them") {
    bothAnsiModes { _ =>
      val df = checkSparkAnswerAndNative(
        data
          .groupBy("b")
          .agg(countDistinct("i32"), countDistinct("s"), sumDistinct(col("i16")), sum("i32"), max("i8")),
        expandAndAggregate
      )
      // Spark's rewrite filters each function by the projection's id (FILTER (WHERE gid = …)): native too.
      val inSpark = executedNodes(df).collect {
        case a: BaseAggregateExec if !a.isInstanceOf[EmberAggregateExec] => a.nodeName
      }
      assert(
        inSpark.isEmpty,
        s"aggregates left in Spark: $inSpark; " +
          EmberExplainInfo.fallbackLines(df.queryExecution.executedPlan).mkString("; ")
      )
      checkSparkAnswerAndNative(
        data.agg(countDistinct("i8"), countDistinct("dt", "s"), avg("f64")),
        expandAndAggregate
      )
    }
  }

  test("empty input, and expressions inside the projections") {
    checkSparkAnswerAndNative(empty.rollup("s", "i32").agg(sum("i32"), grouping_id()), expandAndAggregate)
    checkSparkAnswerAndNative(
      data
        .groupBy(col("i32") % 7)
        .agg(countDistinct(col("i32").cast("long") + 1), countDistinct(upper(col("s")))),
      expandAndAggregate
    )
  }

  test("the switch keeps Expand in Spark, with the reason") {
    withSQLConf("spark.ember.exec.expand.enabled" -> "false") {
      withEmber(enabled = true) {
        val df = data.rollup("s").agg(sum("i32"))
        df.collect()
        assert(!nativeNodes(df).exists(_.isInstanceOf[EmberExpandExec]))
        val reasons =
          executedNodes(df).collect { case e: ExpandExec => e }.flatMap(EmberExecRule.fallbackReasons)
        assert(reasons.exists(_.contains("spark.ember.exec.expand.enabled")), s"reasons: $reasons")
      }
    }
  }
}
