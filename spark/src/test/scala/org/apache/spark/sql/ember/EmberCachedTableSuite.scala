package org.apache.spark.sql.ember

import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.execution.{ColumnarToRowTransition, RowToColumnarTransition}
import org.apache.spark.sql.execution.columnar.{DefaultCachedBatch, InMemoryRelation, InMemoryTableScanExec}
import org.apache.spark.sql.functions._
import org.apache.spark.storage.StorageLevel

/** Cached tables (Ember's cache serializer) read by native operators and by Spark, Ember off vs on. */
class EmberCachedTableSuite extends EmberQueryTest {

  // Spark's test session drops every cached table after each test: each test caches its own.
  private def data: DataFrame = cached(DataGen.table(spark, 3000))
  private def empty: DataFrame = cached(DataGen.table(spark, 0))

  private def cached(df: DataFrame): DataFrame = {
    val c = df.cache()
    c.count()
    c
  }

  private def scans(df: DataFrame): Seq[InMemoryTableScanExec] =
    executedNodes(df).collect { case s: InMemoryTableScanExec => s }

  /** The native inputs that read a cached table's batches themselves. */
  private def nativeCachedInputs(df: DataFrame): Seq[EmberInputExec] =
    nativeNodes(df).collect {
      case in: EmberInputExec if in.simpleString(10).contains("cached table read natively") => in
    }

  private def relationOf(df: DataFrame): InMemoryRelation =
    df.queryExecution.withCachedData.collectFirst { case r: InMemoryRelation => r }.get

  /** Rows and Arrow never change places below the top of the plan. */
  private def assertNoTransitionBelowTop(df: DataFrame): Unit = {
    val transitions = executedNodes(df).drop(1).filter {
      case _: ColumnarToRowTransition | _: RowToColumnarTransition => true
      case _ => false
    }
    assert(
      transitions.size <= 1,
      s"transitions: ${transitions.map(_.nodeName)}\n${df.queryExecution.executedPlan}"
    )
  }

  test("a cached table of every type is kept as Arrow, with Spark's statistics") {
    val data = this.data
    val relation = relationOf(data)
    assert(relation.cacheBuilder.serializer.isInstanceOf[EmberCachedBatchSerializer])
    val batches = relation.cacheBuilder.cachedColumnBuffers.collect()
    assert(batches.nonEmpty && batches.forall(_.isInstanceOf[EmberCachedBatch]))
    assert(batches.map(_.numRows).sum == 3000)
    // Spark's per-column statistics: row count and null count agree with the data.
    val nulls = data.filter(col("i32").isNull).count()
    val i32 = DataGen.schema.fieldIndex("i32")
    assert(batches.map(b => b.asInstanceOf[EmberCachedBatch].stats.getInt(i32 * 5 + 2)).sum == nulls)
    assert(batches.forall(b => b.asInstanceOf[EmberCachedBatch].stats.getInt(i32 * 5 + 3) == b.numRows))
    assert(relation.computeStats().sizeInBytes > 0)
  }

  test("native operators read the cached batches, every type exact") {
    val data = this.data
    bothAnsiModes { _ =>
      val df = checkSparkAnswerAndNative(
        data.filter(col("id") % 3 =!= 1).select(DataGen.schema.fieldNames.map(col).toSeq: _*),
        Seq(cls[EmberInputExec])
      )
      assert(nativeCachedInputs(df).nonEmpty, df.queryExecution.executedPlan.toString)
      val agg = checkSparkAnswerAndNative(
        data.groupBy("s").agg(sum("i32"), count("dec38"), max("ts"), count("bin"), avg("f64")),
        Seq(cls[EmberAggregateExec])
      )
      assert(nativeCachedInputs(agg).nonEmpty)
      assertNoTransitionBelowTop(agg)
    }
  }

  test("serialized and on-disk storage levels") {
    for (level <- Seq(StorageLevel.MEMORY_ONLY_SER, StorageLevel.DISK_ONLY)) {
      val t = DataGen.table(spark, 2000).persist(level)
      try {
        t.count()
        val df = checkSparkAnswerAndNative(
          t.groupBy("i8").agg(sum("i32"), count("s"), max("ts"), count("bin")),
          Seq(cls[EmberAggregateExec])
        )
        assert(nativeCachedInputs(df).nonEmpty, level)
      } finally t.unpersist(blocking = true)
    }
  }

  test("a scan of no column, an empty table, a selection of columns in another order") {
    val (data, empty) = (this.data, this.empty)
    val n = checkSparkAnswerAndNative(data.groupBy().count(), Seq(cls[EmberAggregateExec]))
    assert(nativeCachedInputs(n).nonEmpty)
    checkSparkAnswerAndNative(empty.groupBy("dt").agg(sum("i64")), Seq(cls[EmberAggregateExec]))
    checkSparkAnswerAndNative(
      data.select(col("ntz"), col("s"), col("id") * 2).filter(col("s").isNotNull),
      Seq(cls[EmberFilterExec])
    )
  }

  test("batches the statistics rule out are skipped, natively as by Spark") {
    withSQLConf(
      "spark.sql.inMemoryColumnarStorage.batchSize" -> "100",
      "spark.sql.inMemoryTableScanStatistics.enable" -> "true"
    ) {
      val t = spark
        .range(0, 10000, 1, 2)
        .select(col("id"), (col("id") % 10).cast("string").as("s"), lit(null).cast("int").as("n"))
        .cache()
      try {
        t.count()
        def read(df: DataFrame): Long =
          scans(df).map(_.readBatches.value.longValue).sum
        for (
          (filter, batches) <- Seq((col("id") < 150, 2L), (col("id") === 5050, 1L), (col("n").isNotNull, 0L))
        ) {
          val df =
            checkSparkAnswerAndNative(t.filter(filter).groupBy().agg(sum("id")), Seq(cls[EmberAggregateExec]))
          assert(read(df) == batches, s"batches read for $filter:\n${df.queryExecution.executedPlan}")
          assert(nativeCachedInputs(df).nonEmpty)
          val spark = withEmber(enabled = false) {
            val d = t.filter(filter).groupBy().agg(sum("id"))
            d.collect()
            read(d)
          }
          assert(spark == batches, s"Spark's batches for $filter")
        }
      } finally t.unpersist(blocking = true)
    }
  }

  test("a table cached from a native plan, read back by Spark's row path") {
    val data = DataGen.table(spark, 3000)
    val aggregated = withEmber(enabled = true) {
      val a = data.groupBy("i16").agg(sum("i32").as("total"), max("s").as("top"))
      a.cache()
      a.count()
      a
    }
    try {
      checkSparkAnswerAndNative(aggregated.filter(col("total").isNotNull), Seq(cls[EmberFilterExec]))
      withSQLConf("spark.sql.inMemoryColumnarStorage.enableVectorizedReader" -> "false") {
        checkSparkAnswerAndNative(aggregated.select(col("top"), col("i16")), Seq.empty)
      }
    } finally aggregated.unpersist(blocking = true)
  }

  test("timestamps cached in one session time zone, read in another") {
    val data = DataGen.table(spark, 3000)
    val t = withSQLConf("spark.sql.session.timeZone" -> "America/Los_Angeles") {
      val c = data.select(col("id"), col("ts"), col("dt")).cache()
      c.count()
      c
    }
    try {
      withSQLConf("spark.sql.session.timeZone" -> "Asia/Kolkata") {
        val df = checkSparkAnswerAndNative(
          t.filter(col("ts").isNotNull)
            .select(col("id"), col("ts"), hour(col("ts")), col("ts").cast("string")),
          Seq(cls[EmberInputExec])
        )
        assert(nativeCachedInputs(df).nonEmpty)
      }
    } finally t.unpersist(blocking = true)
  }

  test("a column type the engine does not read: Spark's serializer caches the table, Spark reads it") {
    val data = DataGen.table(spark, 3000)
    val t = data.select(col("id"), array(col("i32"), col("i32")).as("arr")).cache()
    try {
      t.count()
      assert(
        relationOf(t).cacheBuilder.cachedColumnBuffers.collect().forall(_.isInstanceOf[DefaultCachedBatch])
      )
      val df = checkSparkAnswerAndNative(t.select(col("id") + 1, size(col("arr"))), Seq.empty)
      assert(nativeCachedInputs(df).isEmpty)
    } finally t.unpersist(blocking = true)
  }

  test("the switch leaves the scan to Spark, with the reason") {
    val data = this.data
    withSQLConf("spark.ember.exec.inMemoryTableScan.enabled" -> "false") {
      val df = checkSparkAnswerAndNative(data.groupBy("b").agg(sum("i32")), Seq(cls[EmberAggregateExec]))
      assert(nativeCachedInputs(df).isEmpty)
      val inputs = nativeNodes(df).collect { case in: EmberInputExec => in.simpleString(10) }
      assert(inputs.exists(_.contains("spark.ember.exec.inMemoryTableScan.enabled is false")), inputs)
    }
  }
}
