package org.apache.spark.sql.ember

import org.apache.spark.{SparkConf, SparkEnv}
import org.apache.spark.sql.Column
import org.apache.spark.sql.catalyst.optimizer.{BuildLeft, BuildRight}
import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.execution.adaptive.AQEShuffleReadExec
import org.apache.spark.sql.execution.joins.BroadcastHashJoinExec
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf
import org.ember.EmberConf

/**
 * `BroadcastExchangeExec` as Ember's broadcast exchange and `BroadcastHashJoinExec` as the native hash join over
 * its blocks: every join type Spark broadcasts, both build sides, residual conditions, null keys, empty build
 * sides, several keys of several types, AQE on and off; `NOT IN` (null-aware anti joins) with nulls on either
 * side; Spark's own join over the native exchange.
 */
class EmberBroadcastHashJoinSuite extends EmberQueryTest {

  // Broadcast only where hinted.
  override protected def sparkConf: SparkConf = super.sparkConf
    .set("spark.sql.autoBroadcastJoinThreshold", "-1")

  private lazy val left: DataFrame = DataGen.table(spark, 1500, seed = 1).cache()
  private lazy val right: DataFrame = DataGen.table(spark, 700, seed = 2).cache()

  private lazy val l = DataGen.joinSide(left, "l")
  private lazy val r = DataGen.joinSide(right, "r")

  private def exchanges(df: DataFrame): Seq[EmberBroadcastExchangeExec] =
    collectWithSubqueries(df.queryExecution.executedPlan) { case e: EmberBroadcastExchangeExec => e }

  private def joins(df: DataFrame): Seq[EmberBroadcastHashJoinExec] =
    collectWithSubqueries(df.queryExecution.executedPlan) { case j: EmberBroadcastHashJoinExec => j }

  private def sparkJoins(df: DataFrame): Seq[BroadcastHashJoinExec] =
    collectWithSubqueries(df.queryExecution.executedPlan) { case j: BroadcastHashJoinExec => j }

  /**
   * Ember off vs on, the native join and exchange in the plan (unless adaptive execution dropped the join once a
   * side turned out empty).
   */
  private def check(query: => DataFrame): DataFrame = {
    val df = checkSparkAnswerAndNative(query, Seq(cls[EmberBroadcastHashJoinExec]))
    if (joins(df).nonEmpty)
      assert(exchanges(df).nonEmpty, s"no EmberBroadcastExchange in\n${df.queryExecution.executedPlan}")
    df
  }

  private def bothAqeModes(f: => Unit): Unit =
    for (aqe <- Seq("true", "false")) withSQLConf(SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> aqe)(f)

  private val equi: Column = col("lk") === col("rk")
  private val residual: Column = col("lk") === col("rk") && col("lv") < col("rv")

  /** Join types Spark broadcasts, with the side it builds. */
  private val shapes = Seq(
    ("inner", true),
    ("inner", false),
    ("left_outer", false),
    ("right_outer", true),
    ("left_semi", false),
    ("left_anti", false)
  )

  private def join(lhs: DataFrame, rhs: DataFrame, jt: String, buildLeft: Boolean, cond: Column): DataFrame =
    if (buildLeft) broadcast(lhs).join(rhs, cond, jt) else lhs.join(broadcast(rhs), cond, jt)

  test("every broadcast join type, both build sides, with and without a residual condition, AQE on and off") {
    bothAqeModes {
      for ((jt, buildLeft) <- shapes; cond <- Seq(equi, residual)) {
        val df = check(join(l, r, jt, buildLeft, cond))
        val sides = joins(df).map(_.buildSide)
        assert(sides.contains(if (buildLeft) BuildLeft else BuildRight), s"$jt: built $sides")
      }
    }
  }

  test("one hash table per executor, probed by all its tasks; one per task with the shared build off") {
    // Eight tasks with probe rows, so that building per task shows in the build-rows metric.
    val probe = l.repartition(8, col("lid"))
    val others = r.repartition(8, col("rid"))
    for ((jt, buildLeft) <- shapes; shared <- Seq(true, false)) {
      withSQLConf(
        EmberConf.BROADCAST_SHARED_BUILD.key -> shared.toString,
        SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> "false"
      ) {
        val (lhs, rhs) = if (buildLeft) (l, others) else (probe, r)
        val df = check(join(lhs, rhs, jt, buildLeft, residual))
        val built = joins(df).map(_.metrics("build_rows").value).sum
        val buildRows = exchanges(df).map(_.rowCount()).sum
        if (shared) assert(built == buildRows, s"$jt: $built rows built, the build side has $buildRows")
        else assert(built > buildRows, s"$jt: $built rows built per task, the build side has $buildRows")
      }
    }
  }

  test(
    "the executor's shared tables hold at most their share of the off-heap pool; past it, tables per task"
  ) {
    // Spark cannot evict a shared table's storage memory, and a table lives until the driver collects its
    // broadcast: unbounded, the tables of finished queries starved execution memory (TPC-DS at SF 0.01, from
    // its 66th statement on, on a 256 MiB pool). The share is static: set on the executor's conf here.
    val key = EmberConf.BROADCAST_SHARED_BUILD_MAX_FRACTION.key
    val conf = SparkEnv.get.conf
    val before = conf.getOption(key)
    val probe = l.repartition(8, col("lid"))
    try {
      withSQLConf(SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> "false") {
        val pool = conf.getSizeAsBytes("spark.memory.offHeap.size")
        conf.set(key, "0")
        val held = SharedBuildMemory.heldBytes
        val df = check(probe.join(broadcast(r), residual))
        val built = joins(df).map(_.metrics("build_rows").value).sum
        val buildRows = exchanges(df).map(_.rowCount()).sum
        assert(
          built > buildRows,
          s"no room for a shared table: $built rows built per task, $buildRows broadcast"
        )
        // Nothing taken (earlier tests' tables may have been collected meanwhile).
        assert(SharedBuildMemory.heldBytes <= held)
        // A small cap: no new table is taken past it (tables of earlier tests may still be held, until
        // collected).
        conf.set(key, "0.0005")
        val start = SharedBuildMemory.heldBytes
        val bound = math.max(start, (pool * 0.0005).toLong)
        for (i <- 0 until 6) {
          check(probe.join(broadcast(r.where(col("rid") % 6 =!= i)), residual))
          assert(
            SharedBuildMemory.heldBytes <= bound,
            s"query $i: held from $start, cap ${(pool * 0.0005).toLong}"
          )
        }
      }
    } finally before.fold(conf.remove(key))(conf.set(key, _))
  }

  test("dynamic partition pruning reuses Ember's broadcast (its subquery's plan is the broadcast itself)") {
    withTempPath { dir =>
      spark
        .range(0, 20000)
        .selectExpr("id", "id % 10 AS p", "id * 2 AS v")
        .write
        .partitionBy("p")
        .parquet(s"$dir/fact")
      spark.range(0, 10).selectExpr("id AS p", "CONCAT('n', id) AS name").write.parquet(s"$dir/dim")
      spark.read.parquet(s"$dir/fact").createOrReplaceTempView("dpp_fact")
      spark.read.parquet(s"$dir/dim").createOrReplaceTempView("dpp_dim")
      // Failed before ("assertion failed" in AdaptiveSparkPlanExec.doExecuteBroadcast): Spark put a
      // ColumnarToRow above the reused EmberBroadcastExchange in the pruning subquery's plan.
      // The suite broadcasts only where hinted: the dimension is broadcast here, so the pruning reuses it.
      for (aqe <- Seq("true", "false")) withSQLConf(SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> aqe) {
        val df = checkSparkAnswerAndNative(
          spark.sql(
            "SELECT /*+ BROADCAST(d) */ f.p, COUNT(*), SUM(f.v) FROM dpp_fact f JOIN dpp_dim d ON f.p = d.p " +
              "WHERE d.name IN ('n3', 'n7') GROUP BY f.p"
          ),
          Seq(cls[EmberBroadcastHashJoinExec])
        )
        assert(joins(df).nonEmpty, df.queryExecution.executedPlan)
        assert(
          df.queryExecution.executedPlan.toString.contains("SubqueryBroadcast dynamicpruning"),
          s"pruned by a subquery over the join's broadcast: ${df.queryExecution.executedPlan}"
        )
      }
    }
  }

  test("an empty build side, an empty streamed side") {
    bothAqeModes {
      // Not statically false, so the optimizer keeps the join.
      val emptyR = r.where(col("rid") < 0)
      val emptyL = l.where(col("lid") < 0)
      for ((jt, buildLeft) <- shapes; cond <- Seq(equi)) {
        if (buildLeft) {
          check(join(emptyL, r, jt, buildLeft, cond))
          check(join(l, emptyR, jt, buildLeft, cond))
        } else {
          check(join(l, emptyR, jt, buildLeft, cond))
          check(join(emptyL, r, jt, buildLeft, cond))
        }
      }
    }
  }

  test("several keys of several types (int, long, multi-byte string, decimal, date); null keys never match") {
    bothAqeModes {
      val keys = Seq(
        Seq("i32", "i64"),
        Seq("s", "dec"),
        Seq("dt", "s", "i32"),
        Seq("dec38", "i16"),
        Seq("ts", "ntz", "b")
      )
      for (ks <- keys) {
        // Few distinct keys: the columns mod something small, so multi-column keys still match.
        def proj(df: DataFrame, p: String) = df
          .select(
            (col("id") +: ks.map {
              case k @ ("i32" | "i64" | "i16") => (col(k) % 7).as(s"$p$k")
              case "s" => substring(col("s"), 1, 1).as(s"${p}s")
              case "dec" => (col("dec") % 3).cast("decimal(10,2)").as(s"${p}dec")
              case "dec38" => (col("dec38") % 5).cast("decimal(38,10)").as(s"${p}dec38")
              case k => col(k).as(s"$p$k")
            }).map(c => c): _*
          )
          .withColumnRenamed("id", s"${p}id")
        val a = proj(left, "a_")
        val b = proj(right, "b_")
        val cond = ks.map(k => col(s"a_$k") === col(s"b_$k")).reduce(_ && _)
        for ((jt, buildLeft) <- Seq(("inner", true), ("left_outer", false), ("left_anti", false)))
          check(join(a, b, jt, buildLeft, cond))
      }
    }
  }

  test("existence joins (EXISTS ... OR ...)") {
    bothAqeModes {
      l.createOrReplaceTempView("bl")
      r.createOrReplaceTempView("br")
      check(
        spark.sql(
          "SELECT * FROM bl WHERE EXISTS (SELECT /*+ BROADCAST(br) */ 1 FROM br WHERE rk = lk AND rv < lv) " +
            "OR lid < 100"
        )
      )
    }
  }

  private val notIn = Seq(
    // Both sides with null keys.
    "SELECT * FROM nl WHERE lk NOT IN (SELECT rk FROM nr)",
    // Build side without nulls; probe side with them.
    "SELECT * FROM nl WHERE lk NOT IN (SELECT rk FROM nr WHERE rk IS NOT NULL)",
    // Empty build side: every probe row, null keys too.
    "SELECT * FROM nl WHERE lk NOT IN (SELECT rk FROM nr WHERE rid < 0)",
    // Build side of nulls only.
    "SELECT * FROM nl WHERE lk NOT IN (SELECT rk FROM nr WHERE rk IS NULL)",
    // Probe side without nulls, build side with them.
    "SELECT * FROM nl WHERE lk IS NOT NULL AND lk NOT IN (SELECT rk FROM nr)",
    // Neither side with nulls; a string key.
    "SELECT * FROM nl WHERE ls IS NOT NULL AND ls NOT IN (SELECT rs FROM nr WHERE rs IS NOT NULL AND rid > 300)"
  )

  test("NOT IN subqueries (null-aware anti joins) with nulls on either side, empty build sides") {
    bothAqeModes {
      l.createOrReplaceTempView("nl")
      r.createOrReplaceTempView("nr")
      for (q <- notIn) {
        val df = checkSparkAnswerAndNative(spark.sql(q), Seq(cls[EmberBroadcastHashJoinExec]))
        // Adaptive execution drops the join when the build side turns out empty.
        if (!(q.contains("rid < 0") && conf.adaptiveExecutionEnabled)) {
          assert(joins(df).exists(_.isNullAwareAntiJoin), s"$q\n${df.queryExecution.executedPlan}")
          assert(exchanges(df).nonEmpty, s"$q: no native broadcast\n${df.queryExecution.executedPlan}")
        }
      }
    }
  }

  test("Spark's own broadcast join over the native exchange gets Spark's relation") {
    bothAqeModes {
      withSQLConf(EmberConf.EXEC_BROADCAST_HASH_JOIN.key -> "false") {
        l.createOrReplaceTempView("nl")
        r.createOrReplaceTempView("nr")
        val queries = shapes.flatMap { case (jt, buildLeft) =>
          Seq(equi, residual).map(cond => () => join(l, r, jt, buildLeft, cond))
        } ++ notIn.filterNot(_.contains("rid < 0")).map(q => () => spark.sql(q))
        for (q <- queries) {
          val df = checkSparkAnswerAndNative(q(), Nil)
          assert(exchanges(df).nonEmpty, df.queryExecution.executedPlan)
          assert(sparkJoins(df).nonEmpty && joins(df).isEmpty, df.queryExecution.executedPlan)
        }
      }
    }
  }

  test("a chain of broadcast joins (star join) in one native block; a reused broadcast") {
    bothAqeModes {
      val dim1 = r.select(col("rk").as("k1"), col("rs").as("s1"))
      // A tenth of the right side: the chain's output stays near 50k rows (460k with all of it, for no extra
      // coverage).
      val dim2 = r.where(col("rid") % 10 === 0).select(col("rk").as("k2"), col("rd").as("d2"))
      val df = check(
        l.join(broadcast(dim1), col("lk") === col("k1"))
          .join(broadcast(dim2), col("lk") === col("k2"), "left_outer")
      )
      assert(joins(df).size == 2, df.queryExecution.executedPlan)
      // The same broadcast on both sides of a union: Spark reuses the exchange.
      val one = l.join(broadcast(dim1), col("lk") === col("k1"))
      check(one.union(one))
    }
  }

  test("one broadcast reused by joins whose probe sides differ only in their columns' names") {
    // TPC-DS q4/q11/q74: a CTE's customer broadcast reused by a join with store_sales and one with web_sales.
    // The two joins' protos are the same bytes (keys bound by position); each must build its own table.
    bothAqeModes {
      val dim = r.select(col("rk").as("dk"), col("rs").as("ds"))
      val a = l.select(col("lid").as("aid"), col("lk").as("ak"), col("lv").as("av"))
      val b = left.select(col("i64").as("bid"), (col("i32") % 300).as("bk"), col("i16").cast("long").as("bv"))
      // Built on the left, as in those queries (the build side's schema alone used to key the shared table).
      val ja =
        broadcast(dim).join(a, col("ak") === col("dk")).select(lit("a"), col("aid"), col("av"), col("ds"))
      val jb =
        broadcast(dim).join(b, col("bk") === col("dk")).select(lit("b"), col("bid"), col("bv"), col("ds"))
      val df = check(ja.union(jb))
      assert(joins(df).map(_.buildSide) == Seq(BuildLeft, BuildLeft), df.queryExecution.executedPlan)
      val reused = collectWithSubqueries(df.queryExecution.executedPlan) {
        case e: org.apache.spark.sql.execution.exchange.ReusedExchangeExec => e
      }
      assert(reused.nonEmpty, s"the broadcast is not reused in\n${df.queryExecution.executedPlan}")
    }
  }

  test("an aggregate over a broadcast join over a shuffle (native end to end)") {
    bothAqeModes {
      val agg = l.groupBy(col("lk")).agg(sum(col("lv") % 1000).as("sv"), count(lit(1)).as("n"))
      check(
        agg.join(broadcast(r), col("lk") === col("rk")).groupBy(col("rs")).agg(sum(col("sv")), sum(col("n")))
      )
      // A sort aggregate (max of a string) above: its sort, not the join, orders its input.
      check(
        l.join(broadcast(r), equi)
          .groupBy(col("lk") % 13)
          .agg(max(col("rs")), sum(col("lv") % 1000), count(lit(1)))
      )
    }
  }

  test("AQE coalesces the shuffle under a broadcast join whose build side drops its null keys natively") {
    // The join's broadcast requirement is bound to the build side's output, where Spark's IS NOT NULL filter
    // makes the key column non-nullable: the native filter must say the same, or AQE rejects every change to the plan.
    withSQLConf(SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> "true") {
      val df = check {
        val agg = l.groupBy(col("lk")).agg(sum(col("lv") % 1000).as("sv"))
        // A plain column as the key, so the pushed IS NOT NULL lands on an attribute.
        val build = right.select(col("i32").as("rk"), col("s").as("rs"))
        agg.join(broadcast(build), col("lk") === col("rk")).groupBy(col("rs")).agg(sum(col("sv")))
      }
      val plan = df.queryExecution.executedPlan
      val filters = collectWithSubqueries(plan) { case f: EmberFilterExec => f }
      assert(filters.exists(_.output.exists(a => a.name == "i32" && !a.nullable)), plan)
      val reads = collectWithSubqueries(plan) { case r: AQEShuffleReadExec if r.hasCoalescedPartition => r }
      assert(reads.nonEmpty, s"no coalesced shuffle read in\n$plan")
    }
  }

  test("disabled: the exchange and the join stay in Spark with their reasons") {
    withSQLConf(EmberConf.EXEC_BROADCAST_EXCHANGE.key -> "false") {
      val df = l.join(broadcast(r), equi)
      df.collect()
      assert(exchanges(df).isEmpty && joins(df).isEmpty, df.queryExecution.executedPlan)
      assert(
        sparkJoins(df).exists(j =>
          EmberExecRule.fallbackReasons(j).exists(_.contains("not Ember's broadcast exchange"))
        ),
        df.queryExecution.executedPlan
      )
    }
  }
}
