package org.apache.spark.sql.ember

import org.apache.spark.SparkConf
import org.apache.spark.sql.Column
import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.execution.exchange.BroadcastExchangeExec
import org.apache.spark.sql.execution.joins.BroadcastNestedLoopJoinExec
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf

/**
 * `BroadcastNestedLoopJoinExec` (joins without equi-join keys) as the native join over Ember's broadcast: inner
 * and cross joins, outer / semi / anti / existence joins whose build side is not preserved, conditions that are
 * NULL, empty build sides, multi-column `NOT IN`, AQE on and off; full outer joins stay in Spark with the reason.
 */
class EmberBroadcastNestedLoopJoinSuite extends EmberQueryTest {

  // Broadcast only where hinted.
  override protected def sparkConf: SparkConf = super.sparkConf
    .set("spark.sql.autoBroadcastJoinThreshold", "-1")

  private lazy val left: DataFrame = DataGen.table(spark, 400, seed = 3).cache()
  private lazy val right: DataFrame = DataGen.table(spark, 90, seed = 4).cache()

  private lazy val l = DataGen.joinSide(left, "l")
  private lazy val r = DataGen.joinSide(right, "r")

  private def joins(df: DataFrame): Seq[EmberBroadcastNestedLoopJoinExec] =
    collectWithSubqueries(df.queryExecution.executedPlan) { case j: EmberBroadcastNestedLoopJoinExec => j }

  private def check(query: => DataFrame): DataFrame = {
    val df = checkSparkAnswerAndNative(query, Seq(cls[EmberBroadcastNestedLoopJoinExec]))
    val sparkJoins = withEmber(enabled = false) {
      val d = query
      d.collect()
      collectWithSubqueries(d.queryExecution.executedPlan) { case j: BroadcastNestedLoopJoinExec => j }
    }
    if (sparkJoins.nonEmpty)
      assert(joins(df).nonEmpty, s"no native nested-loop join in\n${df.queryExecution.executedPlan}")
    df
  }

  private def bothAqeModes(f: => Unit): Unit =
    for (aqe <- Seq("true", "false")) withSQLConf(SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> aqe)(f)

  // Non-equi conditions, NULL for rows with a NULL operand.
  private val lessThan: Column = col("lk") < col("rk")
  private val mixed: Column = col("lk") < col("rk") && (col("lf") > col("rf") || col("ls") === col("rs"))

  test("inner, outer, semi and anti joins whose build side is not preserved, AQE on and off") {
    val shapes = Seq(
      ("inner", true),
      ("inner", false),
      ("left_outer", false),
      ("right_outer", true),
      ("left_semi", false),
      ("left_anti", false)
    )
    bothAqeModes {
      for ((jt, buildLeft) <- shapes; cond <- Seq(lessThan, mixed)) {
        def q =
          if (buildLeft) broadcast(l).join(r, cond, jt)
          else l.join(broadcast(r), cond, jt)
        check(q)
      }
    }
  }

  test("cross joins, an empty build side, a condition that is NULL for every pair") {
    check(l.crossJoin(broadcast(r.limit(7))))
    check(l.join(broadcast(r.where(col("rid") < 0)), lessThan, "left_outer"))
    check(l.join(broadcast(r.where(col("rid") < 0)), lessThan, "left_anti"))
    check(l.join(broadcast(r.where(col("rid") < 0)), lessThan, "inner"))
    check(l.join(broadcast(r), lit(null).cast("boolean") && lessThan, "left_outer"))
    check(l.join(broadcast(r), lit(null).cast("boolean") || lessThan, "left_anti"))
  }

  test("multi-column NOT IN and EXISTS in a disjunction (anti and existence joins)") {
    l.createOrReplaceTempView("bnlj_l")
    r.createOrReplaceTempView("bnlj_r")
    def notIn = spark
      .sql("SELECT * FROM bnlj_l WHERE (lk, ls) NOT IN (SELECT /*+ BROADCAST(bnlj_r) */ rk, rs FROM bnlj_r)")
      .asInstanceOf[DataFrame]
    check(notIn)
    def exists = spark
      .sql(
        """SELECT lid, lk FROM bnlj_l
          |WHERE EXISTS (SELECT 1 FROM bnlj_r WHERE rk > lk AND rf < 0) OR lid % 3 = 0""".stripMargin
      )
      .asInstanceOf[DataFrame]
    withSQLConf(SQLConf.AUTO_BROADCASTJOIN_THRESHOLD.key -> "10485760")(check(exists))
  }

  test("a full outer join stays in Spark, with the reason, and keeps Spark's broadcast (AQE on and off)") {
    bothAqeModes {
      withEmber(enabled = true) {
        val df = l.join(broadcast(r), lessThan, "full_outer")
        df.collect()
        val plan = df.queryExecution.executedPlan
        val reasons = collectWithSubqueries(plan) { case j: BroadcastNestedLoopJoinExec => j }
          .flatMap(EmberExecRule.fallbackReasons)
        assert(reasons.exists(_.contains("build side is preserved")), s"reasons: $reasons")
        // Ember's broadcast would be decoded on the driver and broadcast a second time for Spark's join.
        assert(collectWithSubqueries(plan) { case e: EmberBroadcastExchangeExec => e }.isEmpty, plan)
        val kept = collectWithSubqueries(plan) { case e: BroadcastExchangeExec => e }
          .flatMap(EmberExecRule.fallbackReasons)
        assert(kept.exists(_.contains("stays in Spark")), s"exchange reasons: $kept")
      }
      checkSparkAnswerAndNative(l.join(broadcast(r), lessThan, "full_outer"), Nil)
    }
  }
}
