package org.apache.spark.sql.ember

import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.execution.{FilterExec, ProjectExec, SortExec}
import org.apache.spark.sql.functions._
import org.ember.EmberExplainInfo

/** What stays in Spark says why; switches turn Ember off per operator and per session at run time. */
class EmberFallbackSuite extends EmberQueryTest {

  private lazy val data = DataGen.table(spark, 500).cache()

  private def reasonsOf[T](df: org.apache.spark.sql.classic.DataFrame)(
      pf: PartialFunction[Any, Boolean]
  ): Seq[String] =
    executedNodes(df).filter(p => pf.applyOrElse(p, (_: Any) => false)).flatMap(EmberExecRule.fallbackReasons)

  test("an unsupported expression keeps the filter in Spark, with the reason") {
    val df = data.where(upper(col("s")) === "S1")
    checkSparkAnswerAndNative(df, Seq.empty)
    withEmber(enabled = true) {
      val q = data.where(upper(col("s")) === "S1")
      q.collect()
      assert(nativeNodes(q).collect { case f: EmberFilterExec => f }.isEmpty)
      val reasons = reasonsOf(q) { case _: FilterExec => true }
      assert(reasons.exists(_.contains("upper")), s"reasons: $reasons")
    }
  }

  test("per-operator switch") {
    withSQLConf("spark.ember.exec.sort.enabled" -> "false") {
      val q = data.sort("s", "id")
      checkSparkAnswerAndNative(q, Seq.empty, ordered = true)
      val df = data.sort("s", "id")
      df.collect()
      assert(!nativeNodes(df).exists(_.isInstanceOf[EmberSortExec]))
      assert(reasonsOf(df) { case _: SortExec => true }.exists(_.contains("spark.ember.exec.sort.enabled")))
    }
  }

  test("the master switch is a runtime conf") {
    val q = () => data.where(col("i32") > 0)
    withEmber(enabled = false) { assert(nativeNodes(q()).isEmpty) }
    withEmber(enabled = true) {
      val df = q()
      df.collect()
      assert(nativeNodes(df).nonEmpty)
    }
  }

  test("unsupported column types stay in Spark") {
    val arr = data.select(col("id"), array(col("i32")).as("a")).where(col("id") > 3)
    checkSparkAnswerAndNative(arr, Seq.empty)
    withEmber(enabled = true) {
      val df = data.select(col("id"), array(col("i32")).as("a")).where(col("id") > 3)
      df.collect()
      // The filter runs natively below the projection; the projection that builds the array stays in Spark.
      assert(reasonsOf(df) { case _: ProjectExec => true }.exists(_.contains("array")))
    }
  }

  test("the explain provider lists reasons") {
    withEmber(enabled = true) {
      val df = data.where(upper(col("s")) === "S1")
      df.collect()
      val text = new EmberExplainInfo().generateExtendedInfo(df.queryExecution.executedPlan)
      assert(text.contains("Filter") && text.contains("upper"), text)
    }
  }
}
