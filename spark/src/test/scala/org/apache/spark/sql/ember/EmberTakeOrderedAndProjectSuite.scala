package org.apache.spark.sql.ember

import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.execution.{CollectLimitExec, TakeOrderedAndProjectExec}
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf

/**
 * ORDER BY ... LIMIT (`TakeOrderedAndProjectExec` → per-partition top-k, Ember's single-partition shuffle,
 * `EmberTakeOrderedAndProjectExec`) and collected LIMITs (`CollectLimitExec` → `EmberCollectLimitExec`), Ember
 * off vs on, with AQE on and off.
 */
class EmberTakeOrderedAndProjectSuite extends EmberQueryTest {

  private lazy val data: DataFrame = DataGen.table(spark, 2000).cache()

  private def bothAqe(f: => Unit): Unit =
    Seq(true, false).foreach(aqe => withSQLConf(SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> aqe.toString)(f))

  private val topK = Seq(cls[EmberTakeOrderedAndProjectExec])

  private def assertNoSparkTopK(df: DataFrame): Unit = {
    val left = executedNodes(df).collect { case t: TakeOrderedAndProjectExec => t }
    assert(left.isEmpty, s"TakeOrderedAndProjectExec left in Spark:\n${df.queryExecution.executedPlan}")
  }

  test("top-k: every orderable type, both directions, nulls first and last, total order") {
    for (aqe <- Seq(true, false)) withSQLConf(SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> aqe.toString) {
      val types = Seq("i32", "i64", "f32", "f64", "dec38", "s", "bin", "dt", "ts", "b")
      for ((c, i) <- (if (aqe) types else types.take(3)).zipWithIndex) {
        val key = if (i % 2 == 0) col(c).asc_nulls_first else col(c).desc_nulls_last
        val other = if (i % 2 == 0) col(c).desc_nulls_first else col(c).asc_nulls_last
        for (order <- Seq(key, other)) {
          val df = checkSparkAnswerAndNative(
            data.orderBy(order, col("id")).limit(37).select(col("id"), col(c)),
            topK,
            ordered = true
          )
          assertNoSparkTopK(df)
          assert(
            executedNodes(df).exists(_.isInstanceOf[EmberShuffleExchangeExec]),
            df.queryExecution.executedPlan.toString
          )
        }
      }
    }
  }

  test("top-k: NaN is largest, -0.0 ties 0.0, in Spark's order") {
    val df = spark
      .createDataFrame(
        Seq[(java.lang.Double, Long)](
          (Double.NaN, 1L),
          (-0.0, 2L),
          (0.0, 3L),
          (null, 4L),
          (Double.NegativeInfinity, 5L),
          (Double.PositiveInfinity, 6L),
          (-0.0, 7L),
          (Double.NaN, 8L),
          (1.5, 9L)
        ).map { case (d, i) => (d, i) }
      )
      .toDF("d", "id")
      .repartition(3)
    bothAqe {
      for (k <- Seq(1, 3, 5, 9, 20)) {
        checkSparkAnswerAndNative(df.orderBy(col("d").asc, col("id")).limit(k), topK, ordered = true)
        checkSparkAnswerAndNative(df.orderBy(col("d").desc, col("id")).limit(k), topK, ordered = true)
      }
    }
  }

  test("top-k: projection, offset, k beyond the input, empty input") {
    bothAqe {
      val q = data.orderBy(col("f64").desc_nulls_first, col("id"))
      checkSparkAnswerAndNative(
        q.limit(25).select((col("i32").cast("long") + 1).as("x"), (col("f64") * 2).as("u"), col("id")),
        topK,
        ordered = true
      )
      data.createOrReplaceTempView("toap_t")
      for ((l, o) <- Seq((10, 5), (1, 0), (3, 2500), (5000, 10))) {
        checkSparkAnswerAndNative(
          spark.sql(s"SELECT id, f32 FROM toap_t ORDER BY f32 NULLS LAST, id DESC LIMIT $l OFFSET $o"),
          topK,
          ordered = true
        )
      }
      checkSparkAnswerAndNative(q.limit(100000), topK, ordered = true)
      checkSparkAnswerAndNative(data.where(col("id") < 0).orderBy(col("id")).limit(5), topK, ordered = true)
    }
  }

  test("top-k: a projection the engine cannot run stays in Spark above the native top-k") {
    def q = data.orderBy(col("f64"), col("id")).limit(20).select(col("id"), upper(col("s")).as("u"))
    val checked = checkSparkAnswerAndNative(q, topK, ordered = true)
    assertNoSparkTopK(checked)
  }

  test("top-k: ties beyond the sort keys are a multiset, as in Spark") {
    val df = spark.range(0, 3000, 1, 5).select((col("id") % 7).as("k"), col("id"))
    bothAqe {
      // Keys only: the answer is determined.
      checkSparkAnswerAndNative(df.orderBy(col("k")).limit(1000).select(col("k")), topK, ordered = true)
      // k = 0 and 1 are 858 rows: the whole tie groups are taken, in any order within each.
      val both = checkSparkAnswerAndNative(df.orderBy(col("k")).limit(858), topK)
      val ks = both.collect().map(_.getLong(0)).toSeq
      assert(ks == ks.sorted, "sorted by k")
      // Cutting through a tie group: Spark's rows among the ties are any; the keys match exactly.
      val cut = withEmber(enabled = true)(df.orderBy(col("k")).limit(500).collect().toSeq)
      val sparkCut = withEmber(enabled = false)(df.orderBy(col("k")).limit(500).collect().toSeq)
      assert(cut.map(_.getLong(0)) == sparkCut.map(_.getLong(0)))
      assert(cut.forall(r => r.getLong(1) % 7 == r.getLong(0)) && cut.map(_.getLong(1)).distinct.size == 500)
    }
  }

  test("top-k: a single-partition child is read without a shuffle") {
    bothAqe {
      val one = spark.range(0, 1000, 1, 1).select(col("id"), (col("id") * 7919 % 1000).as("v"))
      val df =
        checkSparkAnswerAndNative(one.orderBy(col("v").desc, col("id")).limit(10), topK, ordered = true)
      assert(
        !executedNodes(df).exists(_.isInstanceOf[EmberShuffleExchangeExec]),
        df.queryExecution.executedPlan
      )
      checkSparkAnswerAndNative(data.coalesce(1).orderBy(col("s"), col("id")).limit(10), topK, ordered = true)
    }
  }

  test("top-k under a join and an aggregate (not at the top)") {
    bothAqe {
      val top = data.orderBy(col("i64").desc_nulls_last, col("id")).limit(50).select(col("id"), col("i32"))
      checkSparkAnswerAndNative(
        top.join(data.select(col("id"), col("s")), "id").groupBy(col("s")).agg(sum(col("i32"))),
        topK
      )
    }
  }

  test("top-k falls back when disabled") {
    withSQLConf("spark.ember.exec.takeOrderedAndProject.enabled" -> "false") {
      val df = data.orderBy(col("id")).limit(5)
      df.collect()
      assert(executedNodes(df).exists(_.isInstanceOf[TakeOrderedAndProjectExec]))
      assert(!executedNodes(df).exists(_.isInstanceOf[EmberTakeOrderedAndProjectExec]))
    }
  }

  private def collectLimitNode(df: DataFrame): EmberCollectLimitExec =
    executedNodes(df)
      .collectFirst { case c: EmberCollectLimitExec => c }
      .getOrElse(
        fail(s"no EmberCollectLimitExec in\n${df.queryExecution.executedPlan}")
      )

  test("collect limit: collect, offset, show, toLocalIterator (the native RDD path)") {
    bothAqe {
      val q = data.where(col("i32") > 0).select(col("id"), col("s"), col("f64"))
      for (n <- Seq(0, 1, 7, 300, 5000)) {
        // executeCollect: executeTake over the native child, partitions in order (as Spark's).
        val df = checkSparkAnswerAndNative(q.limit(n), Seq(cls[EmberFilterExec]), ordered = true)
        if (n > 0) collectLimitNode(df)
      }
      q.createOrReplaceTempView("cl_t")
      for (
        sql <- Seq(
          "SELECT * FROM cl_t LIMIT 10 OFFSET 3",
          "SELECT * FROM cl_t OFFSET 600",
          "SELECT * FROM cl_t LIMIT 5 OFFSET 100000"
        )
      ) {
        checkSparkAnswerAndNative(spark.sql(sql), Seq(cls[EmberFilterExec]), ordered = true)
      }
      // The RDD path (doExecute): native limit, Ember's single-partition shuffle, native final limit.
      for (n <- Seq(5, 100000)) {
        val sparkRows = withEmber(enabled = false)(q.limit(n).toLocalIterator().asScala.toSeq)
        val (df, emberRows) = withEmber(enabled = true) {
          val df = q.limit(n)
          (df, df.toLocalIterator().asScala.toSeq)
        }
        collectLimitNode(df)
        assert(emberRows.size == sparkRows.size)
        if (n > 1000) assert(exact(emberRows).sortBy(_.toString) == exact(sparkRows).sortBy(_.toString))
        else {
          val all = withEmber(enabled = false)(q.collect().map(_.getLong(0)).toSet)
          assert(emberRows.forall(r => all.contains(r.getLong(0))))
        }
        assertNoNativeMemoryHeld()
      }
      val shown = withEmber(enabled = true)(q.orderBy(col("id")).limit(20).showString(5, 20))
      assert(shown == withEmber(enabled = false)(q.orderBy(col("id")).limit(20).showString(5, 20)))
    }
  }

  test("collect limit stays in Spark over a Spark child, and when disabled") {
    withSQLConf("spark.ember.exec.collectLimit.enabled" -> "false") {
      val df = data.where(col("i32") > 0).limit(5)
      df.collect()
      assert(executedNodes(df).exists(_.isInstanceOf[CollectLimitExec]))
    }
  }

  private implicit class AsScala[T](it: java.util.Iterator[T]) {
    def asScala: Iterator[T] = scala.jdk.CollectionConverters.IteratorHasAsScala(it).asScala
  }
}
