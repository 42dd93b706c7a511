package org.apache.spark.sql.ember

import org.apache.spark.sql.Column
import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.execution.{FilterExec, ProjectExec}
import org.apache.spark.sql.functions._
import org.ember.EmberConf

/**
 * Deeply nested expressions never fail a task: chains of ANDs / ORs cross as balanced trees, deep expressions
 * run natively up to `spark.ember.expression.maxDepth`, and deeper ones stay in Spark with that key as the reason
 * (the executor neither parses the plan nor meets an expression deeper than the bound).
 */
class EmberDeepExpressionSuite extends EmberQueryTest {

  private def data: DataFrame = spark.range(0, 3000, 1, 2).select(col("id"), (col("id") % 97).as("x"))

  private val maxDepthKey = EmberConf.EXPRESSION_MAX_DEPTH.key

  private def reasons(df: DataFrame): Seq[String] =
    executedNodes(df).flatMap(EmberExecRule.fallbackReasons)

  /** Ember off vs on, the same rows; with Ember on, the operator stays in Spark because of the depth bound. */
  private def checkDepthFallback(query: => DataFrame, sparkNode: Class[_]): Unit = {
    checkSparkAnswerAndNative(query, Seq.empty)
    withEmber(enabled = true) {
      val df = query
      df.collect()
      assert(executedNodes(df).exists(sparkNode.isInstance), df.queryExecution.executedPlan.toString)
      assert(reasons(df).exists(_.contains(maxDepthKey)), s"reasons: ${reasons(df)}")
    }
  }

  /**
   * Runs `f` (building, planning and collecting a query) on a thread with a big stack: Spark's own driver-side
   * recursion over expressions this deep (Column → Catalyst conversion, analysis) overflows a default 1 MiB
   * thread stack before Ember sees the plan. Tasks still run on Spark's ordinary task threads.
   */
  private def onBigStack(f: => Unit): Unit = {
    var failure: Throwable = null
    // Spark's optimizer needs more than its default 100 iterations to settle on chains this long (a test
    // session fails instead of warning).
    def run(): Unit = withSQLConf("spark.sql.optimizer.maxIterations" -> "2000")(f)
    val t = new Thread(
      null,
      () =>
        try run()
        catch { case e: Throwable => failure = e },
      "deep-expression",
      512L << 20
    )
    t.start()
    t.join()
    if (failure != null) throw failure
  }

  /** `id + 0 = ... OR id + 1 = ...`: n predicates in one left-deep chain of ORs. */
  private def ors(n: Int): Column =
    (0 until n).map(i => (col("id") + i) % 509 === 0).reduce(_ || _)

  /** n nested CASE WHENs, each in the previous one's THEN branch. */
  private def cases(n: Int): Column =
    (0 until n).foldLeft(col("x"))((e, i) => when(col("id") > i * 7, e).otherwise(lit(i)))

  test("300 ORs run natively (a balanced tree of depth 9)") {
    onBigStack {
      checkSparkAnswerAndNative(data.where(ors(300)), Seq(cls[EmberFilterExec]))
      checkSparkAnswerAndNative(data.where(not(ors(300))), Seq(cls[EmberFilterExec]))
    }
  }

  test("300 ANDs under ANSI keep Spark's left-to-right evaluation: no error from a decided row") {
    onBigStack {
      // Each conjunct divides by (x - i), zero on some rows: Spark only evaluates it where every conjunct before
      // it was not false, and the first conjunct (x > 96) is false on every row where a division would fail.
      withSQLConf("spark.sql.ansi.enabled" -> "true") {
        val conjuncts = (col("x") > 96) +: (0 until 299).map(i => col("id") / (col("x") - (i % 96)) > -1)
        checkSparkAnswerAndNative(data.where(conjuncts.reduce(_ && _)), Seq(cls[EmberFilterExec]))
      }
    }
  }

  test("30 nested arithmetic levels run natively") {
    onBigStack {
      val deep = (0 until 30).foldLeft(col("id"))((e, i) => if (i % 2 == 0) e + col("x") else e * 3)
      checkSparkAnswerAndNative(data.select(col("id"), deep.as("v")), Seq(cls[EmberProjectExec]))
    }
  }

  test("100 nested CASE WHENs: native within spark.ember.expression.maxDepth, else Spark with the reason") {
    onBigStack {
      if (EmberConf.EXPRESSION_MAX_DEPTH.default >= 110) {
        checkSparkAnswerAndNative(data.select(col("id"), cases(100).as("c")), Seq(cls[EmberProjectExec]))
      } else {
        checkDepthFallback(data.select(col("id"), cases(100).as("c")), classOf[ProjectExec])
      }
      withSQLConf(maxDepthKey -> "50") {
        checkDepthFallback(data.select(col("id"), cases(100).as("c")), classOf[ProjectExec])
        checkDepthFallback(data.where(cases(100) > 3), classOf[FilterExec])
      }
    }
  }

  // 2000 levels overflow Spark's own Java serialization of the task (DAGScheduler thread), Ember or not.
  test("500 nested additions stay in Spark with the reason, and the query answers") {
    onBigStack {
      val deep = (0 until 500).foldLeft(col("id"))((e, _) => e + col("x"))
      // Spark's generated code for it does not compile (Janino): Spark evaluates it interpreted.
      withSQLConf(
        "spark.sql.codegen.wholeStage" -> "false",
        "spark.sql.codegen.factoryMode" -> "NO_CODEGEN"
      ) {
        checkDepthFallback(data.select(col("id"), deep.as("v")), classOf[ProjectExec])
      }
    }
  }
}
