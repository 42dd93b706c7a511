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
    def df = data.where(format_number(col("f64"), 2) === "a")
    checkSparkAnswerAndNative(df, Seq.empty)
    withEmber(enabled = true) {
      val q = data.where(format_number(col("f64"), 2) === "a")
      q.collect()
      assert(nativeNodes(q).collect { case f: EmberFilterExec => f }.isEmpty)
      val reasons = reasonsOf(q) { case _: FilterExec => true }
      assert(reasons.exists(_.contains("format_number")), s"reasons: $reasons")
    }
  }

  test("per-operator switch") {
    withSQLConf("spark.ember.exec.sort.enabled" -> "false") {
      def q = data.sort("s", "id")
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
    def arr = data.select(col("id"), array(col("i32")).as("a")).where(col("id") > 3)
    checkSparkAnswerAndNative(arr, Seq.empty)
    withEmber(enabled = true) {
      val df = data.select(col("id"), array(col("i32")).as("a")).where(col("id") > 3)
      df.collect()
      // The filter runs natively below the projection; the projection that builds the array stays in Spark.
      assert(reasonsOf(df) { case _: ProjectExec => true }.exists(_.contains("array")))
    }
  }

  test("the engine decides: an operator it cannot plan falls back on the driver with its planning error") {
    import org.apache.spark.sql.ember.serde.{EngineSupport, FilterSerde, TypeSerde}
    import org.apache.spark.sql.types.LongType
    import org.ember.proto
    withEmber(enabled = true) {
      val df = data.where(col("i32") > 0)
      df.collect()
      assert(executedNodes(df).exists(_.isInstanceOf[EmberFilterExec]))
      // The serde's own operator plans in the engine.
      val sparkFilter = df.queryExecution.sparkPlan.collectFirst { case f: FilterExec => f }.get
      val op = FilterSerde.convert(sparkFilter).toOption.get
      assert(EngineSupport.check(sparkFilter, op) == Right(()))
      // A predicate over a BIGINT column is not boolean: the engine's planner says so, and that is the reason.
      val id = sparkFilter.child.output.indexWhere(_.name == "id")
      val notBoolean = op.toBuilder
        .setFilter(
          proto.Filter
            .newBuilder()
            .setPredicate(
              proto.Expr
                .newBuilder()
                .setColumn(
                  proto.ColumnRef
                    .newBuilder()
                    .setIndex(id)
                    .setType(TypeSerde.convert(LongType, "UTC").toOption.get)
                )
            )
        )
        .build()
      val verdict = EngineSupport.check(sparkFilter, notBoolean)
      assert(verdict.isLeft && verdict.left.toOption.get.startsWith("the engine declines:"), verdict)
    }
  }

  test("EXPLAIN EXTENDED under AQE shows the native operators and the reasons before the query runs") {
    withEmber(enabled = true) {
      withSQLConf(
        "spark.sql.adaptive.enabled" -> "true",
        "spark.sql.extendedExplainProviders" -> "org.ember.EmberExplainInfo"
      ) {
        val df = data
          .where(col("i32") > 0)
          .groupBy(col("s"))
          .agg(sum(format_number(col("f64"), 2).isNull.cast("int")))
        val text = df.queryExecution.explainString(org.apache.spark.sql.execution.ExtendedMode)
        assert(text.contains("Native:"), text)
        val section = text.substring(text.indexOf("Native:"))
        assert(section.contains("EmberFilter"), section)
        assert(section.contains("format_number"), section)
        // Nothing ran: AQE is still on its initial plan.
        val adaptive = df.queryExecution.executedPlan
          .asInstanceOf[org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec]
        assert(!adaptive.isFinalPlan)
      }
    }
  }

  test("the explain provider lists reasons") {
    withEmber(enabled = true) {
      val df = data.where(format_number(col("f64"), 2) === "a")
      df.collect()
      val text = new EmberExplainInfo().generateExtendedInfo(df.queryExecution.executedPlan)
      assert(text.contains("Filter") && text.contains("format_number"), text)
    }
  }
}
