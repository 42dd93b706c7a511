package org.apache.spark.sql.ember

import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.functions._
import org.ember.proto

/** Filter, project, sort and limit over random data, Ember off vs on, under ANSI on and off. */
class EmberOperatorSuite extends EmberQueryTest {

  private lazy val data: DataFrame = DataGen.table(spark, 3000).cache()

  private val orderable =
    Seq("b", "i8", "i16", "i32", "i64", "f32", "f64", "dec", "dec38", "s", "bin", "dt", "ts", "ntz")

  test("metrics: every name the JVM shows natively is one the engine declares") {
    // Nodes in a plan are checked by every checkSparkAnswerAndNative; the shuffle writer never is in one.
    assertNamesDeclared(
      proto.Operator.KindCase.SHUFFLE_WRITER,
      EmberShuffleWriterExec.ownMetrics(spark.sparkContext, "rows").keySet,
      "EmberShuffleWriterExec"
    )
    val declared = EmberQueryTest.engineMetricNames
    assert(declared("spilling_hash_join").contains("build_rows"), declared)
    // The check fails on a name the engine does not declare.
    intercept[org.scalatest.exceptions.TestFailedException](
      assertNamesDeclared(proto.Operator.KindCase.SORT, Set("packed_sort_rowz"), "EmberSortExec")
    )
  }

  test("project: columns and literals of every type") {
    bothAnsiModes { _ =>
      checkSparkAnswerAndNative(
        data.select(
          col("id"),
          col("s"),
          col("f64"),
          col("dec38"),
          lit(1.5).as("l1"),
          lit(null).cast("int").as("n"),
          lit("x").as("lx"),
          col("bin"),
          col("ts"),
          col("ntz"),
          col("dt")
        ),
        Seq(cls[EmberProjectExec])
      )
    }
  }

  test("filter: comparisons of every orderable type against literals and columns") {
    bothAnsiModes { _ =>
      for (c <- orderable) {
        val first = data.where(col(c).isNotNull).select(c).head().get(0)
        checkSparkAnswerAndNative(data.where(col(c) >= lit(first)), Seq(cls[EmberFilterExec]))
        checkSparkAnswerAndNative(
          data.where(col(c) === lit(first) || col(c) < lit(first)),
          Seq(cls[EmberFilterExec])
        )
        checkSparkAnswerAndNative(data.where(col(c) <=> lit(first)), Seq(cls[EmberFilterExec]))
        checkSparkAnswerAndNative(data.where(col(c) =!= col(c)), Seq(cls[EmberFilterExec]))
      }
    }
  }

  test("filter: NaN equals NaN and -0.0 equals 0.0, as in Spark") {
    checkSparkAnswerAndNative(data.where(col("f64") === lit(Double.NaN)), Seq(cls[EmberFilterExec]))
    checkSparkAnswerAndNative(data.where(col("f64") === lit(0.0)), Seq(cls[EmberFilterExec]))
    checkSparkAnswerAndNative(data.where(col("f32") === lit(-0.0f)), Seq(cls[EmberFilterExec]))
    checkSparkAnswerAndNative(data.where(col("f64") > lit(Double.MaxValue)), Seq(cls[EmberFilterExec]))
    checkSparkAnswerAndNative(data.where(col("f64").isin(Double.NaN, -0.0)), Seq(cls[EmberFilterExec]))
  }

  test("filter: three-valued AND / OR / NOT, IS [NOT] NULL, IN, CASE WHEN, COALESCE") {
    bothAnsiModes { _ =>
      val p = col("b") && col("i32") > 0 || !(col("s") === "s1") && col("dt").isNull
      checkSparkAnswerAndNative(data.where(p), Seq(cls[EmberFilterExec]))
      checkSparkAnswerAndNative(data.where(not(p) || col("i64").isNotNull), Seq(cls[EmberFilterExec]))
      checkSparkAnswerAndNative(
        data.where(col("i32").isin(0, -1, 5, 7, Int.MaxValue)),
        Seq(cls[EmberFilterExec])
      )
      checkSparkAnswerAndNative(
        data.where(col("s").isin("", "s3", "NULL") || col("s").isin(Seq.tabulate(30)(i => s"s$i"): _*)),
        Seq(cls[EmberFilterExec])
      )
      checkSparkAnswerAndNative(
        data.select(
          col("id"),
          when(col("i32") > 0, col("s")).when(col("b"), lit("t")).otherwise(col("s")).as("c"),
          coalesce(col("i64"), col("id")).as("co"),
          when(col("f64") > 0, lit(1)).as("pos")
        ),
        Seq(cls[EmberProjectExec])
      )
    }
  }

  test("scalar subqueries: results bound as literals in native filters and projections") {
    data.createOrReplaceTempView("subquery_t")
    // The operators that use a subquery's result, native (the subqueries' own plans may be native anyway).
    def bound(df: DataFrame): Seq[EmberExec] =
      collectWithSubqueries(df.queryExecution.executedPlan) { case e: EmberExec => e }
        .filter(e =>
          e.expressions.exists(_.exists(_.isInstanceOf[org.apache.spark.sql.execution.ScalarSubquery]))
        )
    Seq("true", "false").foreach { aqe =>
      withSQLConf("spark.sql.adaptive.enabled" -> aqe) {
        bothAnsiModes { _ =>
          val filtered = checkSparkAnswerAndNative(
            spark.sql(
              "SELECT id, i32 FROM subquery_t WHERE i32 > (SELECT avg(i32) FROM subquery_t) " +
                "AND dec38 < (SELECT max(dec38) FROM subquery_t WHERE i32 IS NULL) " +
                "AND s <> coalesce((SELECT max(s) FROM subquery_t WHERE id < 0), 'x')"
            ),
            Seq(cls[EmberFilterExec])
          )
          assert(
            bound(filtered).exists(_.isInstanceOf[EmberFilterExec]),
            filtered.queryExecution.executedPlan
          )
          val projected = checkSparkAnswerAndNative(
            spark.sql(
              "SELECT id, CAST(i32 AS BIGINT) - (SELECT min(i32) FROM subquery_t) AS d, " +
                "(SELECT max(dt) FROM subquery_t WHERE false) AS none FROM subquery_t"
            ),
            Seq(cls[EmberProjectExec])
          )
          assert(
            bound(projected).exists(_.isInstanceOf[EmberProjectExec]),
            projected.queryExecution.executedPlan
          )
        }
      }
    }
  }

  test("sort: every orderable type, both directions, both null orders") {
    bothAnsiModes { _ =>
      for (c <- orderable) {
        checkSparkAnswerAndNative(
          data.sort(col(c).asc_nulls_first, col("id")),
          Seq(cls[EmberSortExec]),
          ordered = true
        )
        checkSparkAnswerAndNative(
          data.sort(col(c).desc_nulls_last, col("id").desc),
          Seq(cls[EmberSortExec]),
          ordered = true
        )
      }
    }
  }

  test(
    "sort: integer-like and float keys go to the packed-key radix sort, strings and the switch to row-format keys"
  ) {
    def metric(df: DataFrame, name: String): Long =
      nativeNodes(df).collect { case s: EmberSortExec => s.metrics(name).value }.sum
    // Every packable type (boolean, byte … long, float, double with NaN and -0.0, decimal(10, 2), date,
    // timestamps) with nulls, both directions.
    for (c <- Seq("b", "i8", "i16", "i32", "i64", "f32", "f64", "dec", "dt", "ts", "ntz")) {
      val df = checkSparkAnswerAndNative(
        data.sort(col(c).desc_nulls_first, col("i32").asc_nulls_last, col("id")),
        Seq(cls[EmberSortExec]),
        ordered = true
      )
      assert(metric(df, "packed_sort_rows") == 3000, s"$c: every row radix sorted")
      assert(metric(df, "sort_fallbacks") == 0, c)
    }
    // Window-shaped keys over a shuffle: (partition key, order key) per task.
    val df = checkSparkAnswerAndNative(
      data.repartition(3, col("i16")).sortWithinPartitions(col("i16"), col("id").desc),
      Seq(cls[EmberSortExec]),
      ordered = true
    )
    assert(metric(df, "packed_sort_rows") == 3000)
    // A string key, or the switch off: keys compared in row format, the same rows in the same order.
    val strings =
      checkSparkAnswerAndNative(data.sort(col("s"), col("id")), Seq(cls[EmberSortExec]), ordered = true)
    assert(metric(strings, "packed_sort_rows") == 0)
    withSQLConf("spark.ember.sort.radix.enabled" -> "false") {
      val off =
        checkSparkAnswerAndNative(data.sort(col("i64"), col("id")), Seq(cls[EmberSortExec]), ordered = true)
      assert(metric(off, "packed_sort_rows") == 0)
    }
  }

  test("sort: multiple keys, NaN largest and -0.0 == 0.0 as Spark orders them") {
    checkSparkAnswerAndNative(
      data.sort(col("f64").desc, col("b"), col("id")),
      Seq(cls[EmberSortExec]),
      ordered = true
    )
    checkSparkAnswerAndNative(
      data.sort(col("f32"), col("s").desc_nulls_first, col("id")),
      Seq(cls[EmberSortExec]),
      ordered = true
    )
    checkSparkAnswerAndNative(
      data.sortWithinPartitions(col("dec"), col("id")),
      Seq(cls[EmberSortExec]),
      ordered = true
    )
  }

  test("filter + project + sort chain in one native block") {
    val df = checkSparkAnswerAndNative(
      data
        .where(col("i32") > 0 && col("s").isNotNull)
        .select(col("id"), col("s"), col("f64"))
        .sort(col("s"), col("id")),
      Seq(cls[EmberFilterExec], cls[EmberProjectExec], cls[EmberSortExec]),
      ordered = true
    )
    // The sort and what feeds it directly are one native plan: only one input leaf per block.
    assert(nativeNodes(df).count(_.isInstanceOf[EmberInputExec]) <= 2)
  }

  test("limit and offset") {
    val one = spark.range(0, 1000, 1, 1).toDF("x")
    checkSparkAnswerAndNative(
      one.where(col("x") % 3 === 0).limit(17).where(col("x") > 5),
      Seq(cls[EmberGlobalLimitExec])
    )
    checkSparkAnswerAndNative(one.offset(5).limit(10).where(col("x") > 0), Seq(cls[EmberGlobalLimitExec]))
    checkSparkAnswerAndNative(one.limit(0).where(col("x") > 0), Seq.empty)
  }

  test("empty inputs") {
    val empty = data.where(lit(false))
    checkSparkAnswerAndNative(data.where(col("id") < 0).sort("s"), Seq(cls[EmberSortExec]))
    checkSparkAnswerAndNative(
      spark
        .createDataFrame(spark.sparkContext.emptyRDD[org.apache.spark.sql.Row], DataGen.schema)
        .where(col("b")),
      Seq(cls[EmberFilterExec])
    )
    assert(empty.collect().isEmpty)
  }

  test("two native blocks in one stage, with a Spark operator between them (nested native plans)") {
    val df = () =>
      spark
        .range(0, 2000, 1, 2)
        .where(col("id") % 7 =!= 0)
        .select(col("id"), explode(array(col("id"), col("id") * 2)).as("e"))
        .where(col("e") > 10)
        .sortWithinPartitions(col("e"), col("id"))
    checkSparkAnswerAndNative(df(), Seq(cls[EmberFilterExec], cls[EmberSortExec]), ordered = true)
    withEmber(enabled = true) {
      val q = df()
      q.collect()
      assert(
        nativeNodes(q).count(_.isInstanceOf[EmberInputExec]) >= 2,
        q.queryExecution.executedPlan.toString
      )
    }
  }

  test("spark.range generated natively: Spark's partitions, bounds, order and row counts, to BIGINT's ends") {
    val ranges = Seq(
      (0L, 100L, 1L, 3),
      (0L, 0L, 1L, 2), // empty: no partitions
      (10L, -10L, -3L, 4),
      (5L, 6L, 1L, 8), // more slices than rows
      (0L, 10L, 20L, 2),
      (-1000L, 1000L, 17L, 7),
      (Long.MaxValue - 10, Long.MaxValue, 3L, 3),
      (Long.MinValue, Long.MinValue + 20, 7L, 2),
      (Long.MinValue + 5, Long.MinValue, -2L, 3),
      (Long.MinValue, Long.MaxValue, Long.MaxValue / 2, 5)
    )
    def rangeRows(df: DataFrame): Long =
      nativeNodes(df).collect { case i: EmberInputExec => i.metrics("rangeRows").value }.sum
    for ((start, end, step, slices) <- ranges) {
      def query =
        spark.range(start, end, step, slices).where(col("id") % 3 =!= 1).select(col("id"), col("id") % 7)
      val expected = withEmber(enabled = false)(spark.range(start, end, step, slices).count())
      val df = checkSparkAnswerAndNative(query, Seq(cls[EmberFilterExec]), ordered = true)
      assert(rangeRows(df) == expected, s"range($start, $end, $step, $slices)")
      withSQLConf("spark.ember.exec.range.enabled" -> "false") {
        val rows = checkSparkAnswerAndNative(query, Seq(cls[EmberFilterExec]), ordered = true)
        assert(rangeRows(rows) == 0)
      }
    }
  }

  test("batches without columns (count over a native filter)") {
    bothAnsiModes { _ =>
      checkSparkAnswerAndNative(data.where(col("i32") > 0).groupBy().count(), Seq(cls[EmberFilterExec]))
      checkSparkAnswerAndNative(
        spark.range(0, 100, 1, 3).selectExpr().where(lit(true)).limit(7).groupBy().count(),
        Seq.empty
      )
    }
  }

  test("columnar inputs (Parquet scan, cached primitives) are copied column by column, every type and null") {
    withTempPath { dir =>
      // Dictionary-encoded and plain Parquet columns; small batches: many per task, some partitions empty.
      val (dict, plain) = (s"${dir.getCanonicalPath}/dict", s"${dir.getCanonicalPath}/plain")
      DataGen.table(spark, 3000).write.parquet(dict)
      DataGen.table(spark, 3000).write.option("parquet.enable.dictionary", "false").parquet(plain)
      // Spark's vectorized reader, whose batches are copied (the native scan reads these types itself now).
      withSQLConf(
        "spark.sql.parquet.columnarReaderBatchSize" -> "97",
        "spark.ember.exec.parquetScan.enabled" -> "false"
      ) {
        val primitives = data.select("id", "b", "i8", "i16", "i32", "i64", "f32", "f64").cache()
        try {
          for (input <- Seq(spark.read.parquet(dict), spark.read.parquet(plain), primitives)) {
            bothAnsiModes { _ =>
              checkSparkAnswerAndNative(
                input.select(input.columns.reverse.map(col).toSeq: _*),
                Seq(cls[EmberProjectExec])
              )
              checkSparkAnswerAndNative(
                input.where(col("i32") > 0 || col("i32").isNull),
                Seq(cls[EmberFilterExec])
              )
              checkSparkAnswerAndNative(input.where(col("id") < 0), Seq(cls[EmberFilterExec]))
            }
            withEmber(enabled = true) {
              val q = input.where(col("id") % 2 === 0)
              q.collect()
              val columnarInputs = nativeNodes(q).collect {
                case in: EmberInputExec if in.child.supportsColumnar => in
              }
              assert(columnarInputs.nonEmpty, q.queryExecution.executedPlan.toString)
            }
          }
        } finally primitives.unpersist()
      }
    }
  }

  test("a renaming projection re-expresses its output partitioning (no shuffle wrongly skipped)") {
    // Shape of Spark's SPARK-53550: a union of aggregates over renamed columns, joined on the renamed key.
    withTempView("base") {
      spark.range(0, 50, 1, 3).selectExpr("id % 7 AS k", "id AS v").createOrReplaceTempView("base")
      val df = () => sql("""
          |WITH a AS (SELECT k AS name, avg(v) AS av FROM base GROUP BY k),
          |     b AS (SELECT a1.name, a2.av FROM a a1 JOIN a a2 ON a1.name = a2.name),
          |     c AS (SELECT DISTINCT * FROM (SELECT * FROM a UNION SELECT * FROM b))
          |SELECT c1.name, c2.av FROM c c1 JOIN c c2 ON c1.name = c2.name
          |""".stripMargin)
      checkSparkAnswerAndNative(df(), Seq(cls[EmberProjectExec]))
    }
  }
}
