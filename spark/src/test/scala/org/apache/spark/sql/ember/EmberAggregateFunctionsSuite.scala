package org.apache.spark.sql.ember

import org.apache.spark.sql.Row
import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.functions._
import org.apache.spark.sql.types._

/**
 * Decimal `sum` / `avg` (Spark's `[sum, isEmpty]` and `[sum, count]` buffers, overflow to NULL or Spark's error),
 * FLOAT/DOUBLE `min` / `max` (Spark's NaN and -0.0 order) and FLOAT/DOUBLE grouping keys (normalized in the
 * partial aggregate), natively, against Spark: both ANSI modes, native/Spark partial/final mixes, forced
 * pass-through.
 */
class EmberAggregateFunctionsSuite extends EmberQueryTest {

  private lazy val data: DataFrame = DataGen.table(spark, 3000).cache()

  private val agg = Seq(cls[EmberAggregateExec])

  private def nativeAggs(df: DataFrame): Seq[EmberAggregateExec] =
    executedNodes(df).collect { case a: EmberAggregateExec => a }

  private def sparkAggs(df: DataFrame): Seq[BaseAggregateExec] =
    executedNodes(df).collect { case a: BaseAggregateExec if !a.isInstanceOf[EmberAggregateExec] => a }

  /** Spark's error class, natively too (without AQE, the plan checked before running is the one that runs). */
  private def checkError(query: => DataFrame): Unit =
    withSQLConf("spark.sql.adaptive.enabled" -> "false")(checkSparkErrorAndNative(query, agg))

  /** Spark's answer or Spark's error class, whichever Spark gives, natively too. */
  private def checkSame(query: => DataFrame): Unit = {
    val failed = withEmber(enabled = false)(scala.util.Try(query.collect()).isFailure)
    if (failed) checkError(query) else checkSparkAnswerAndNative(query, agg)
  }

  private val sides = Seq("both", "partial", "final")

  private def decimals(
      rows: Seq[(Int, java.math.BigDecimal)],
      dt: DecimalType,
      partitions: Int
  ): DataFrame = {
    val schema = StructType(Seq(StructField("k", IntegerType), StructField("v", dt)))
    spark.createDataFrame(
      spark.sparkContext.parallelize(rows.map { case (k, v) => Row(k, v) }, partitions),
      schema
    )
  }

  private def bd(s: String) = new java.math.BigDecimal(s)

  // ---------------------------------------------------------------- decimal sum / avg

  test("decimal sum and avg on random data: grouped and global, every native side, both ANSI modes") {
    // dec: DECIMAL(10, 2) (sum DECIMAL(20, 2); its avg Spark computes over unscaled longs), dec38: DECIMAL(38, 10)
    // whose extremes overflow (NULL in LEGACY mode), d20: DECIMAL(20, 5) (avg DECIMAL(24, 9)).
    val df = data.select(
      col("i8"),
      col("i16"),
      col("dec"),
      col("dec38"),
      (col("dec") * 1000).cast(DecimalType(20, 5)).as("d20"),
      when(abs(col("dec38")) < 1e15, col("dec38")).as("small38")
    )
    val fs = Seq(
      sum("dec"),
      sum("dec38"),
      avg("dec38"),
      sum("d20"),
      avg("d20"),
      sum("small38"),
      avg("small38"),
      count(lit(1))
    )
    for (side <- sides) {
      withSQLConf("spark.ember.aggregate.nativeSides" -> side, "spark.sql.ansi.enabled" -> "false") {
        val grouped = checkSparkAnswerAndNative(df.groupBy("i8").agg(fs.head, fs.tail: _*), agg)
        assert(nativeAggs(grouped).size == (if (side == "both") 2 else 1))
        checkSparkAnswerAndNative(df.groupBy("i16").agg(fs.head, fs.tail: _*), agg)
        checkSparkAnswerAndNative(df.agg(fs.head, fs.tail: _*), agg)
      }
      // ANSI: the random extremes of dec38 overflow (Spark's error); the rest does not.
      withSQLConf("spark.ember.aggregate.nativeSides" -> side, "spark.sql.ansi.enabled" -> "true") {
        val safe = Seq(sum("dec"), sum("d20"), avg("d20"), sum("small38"), avg("small38"), count(lit(1)))
        checkSparkAnswerAndNative(df.groupBy("i8").agg(safe.head, safe.tail: _*), agg)
        checkSparkAnswerAndNative(df.agg(safe.head, safe.tail: _*), agg)
        // One kind of error only (a grouped sum's result type is its buffer's): which group raises first is
        // up to the hash table's order, so queries whose groups could raise different errors are not compared.
        checkSame(df.groupBy("i8").agg(sum("dec38")))
        checkSame(df.agg(sum("dec38")))
      }
    }
  }

  test(
    "decimal sum overflow of p+10 digits: NULL in LEGACY, ARITHMETIC_OVERFLOW in ANSI; empty groups NULL"
  ) {
    val max38 = bd("9" * 38)
    val rows = Seq(
      (1, max38),
      (1, max38), // group 1 overflows
      (2, bd("5")),
      (2, null), // group 2 fits
      (3, null), // group 3 only NULLs
      (4, max38.negate()),
      (4, bd("-1")), // group 4 overflows downwards
      (5, bd("1" + "0" * 33)),
      (5, bd("1" + "0" * 33)) // group 5 fits, and so does its average (DECIMAL(38, 4))
    )
    for (partitions <- Seq(1, 3); side <- sides) {
      val df = decimals(rows, DecimalType(38, 0), partitions)
      withSQLConf("spark.ember.aggregate.nativeSides" -> side) {
        bothAnsiModes { ansi =>
          if (ansi) {
            checkError(df.groupBy("k").agg(sum("v"), count("v")))
            checkError(df.groupBy("k").agg(avg("v")))
          } else checkSparkAnswerAndNative(df.groupBy("k").agg(sum("v"), avg("v"), count("v")), agg)
          // Without the overflowing groups: exact sums and NULL for the all-NULL group in both modes.
          val fits = checkSparkAnswerAndNative(
            df.where("k IN (2, 3, 5)").groupBy("k").agg(sum("v"), avg("v"), count("v")),
            agg
          )
          assert(fits.collect().exists(r => r.getInt(0) == 3 && r.isNullAt(1) && r.isNullAt(2)))
          checkSame(df.agg(sum("v")))
          checkSame(df.agg(avg("v")))
          checkSame(df.where("k IN (2, 3, 5)").agg(sum("v"), avg("v")))
        }
      }
    }
  }

  test(
    "decimal sums: an overflow in the middle of a group (grouped: NULL for good; global: Spark's own rule)"
  ) {
    // 9e37 + 9e37 overflows 38 digits; - 9e37 would bring it back.
    val big = bd("9" + "0" * 37)
    val rows = Seq((1, big), (1, big), (1, big.negate()), (2, big), (2, big.negate()), (2, big))
    for (partitions <- Seq(1, 2)) {
      val df = decimals(rows, DecimalType(38, 0), partitions)
      bothAnsiModes { _ =>
        for (k <- Seq(1, 2); f <- Seq("sum", "avg")) {
          checkSame(df.where(s"k = $k").groupBy("k").agg(expr(s"$f(v)")))
          checkSame(df.where(s"k = $k").agg(expr(s"$f(v)")))
        }
        checkSame(df.agg(sum("v")))
      }
    }
  }

  test("global decimal sum over a union of single-partition inputs (SPARK-28067's shape): one row") {
    // No exchange under the aggregate: the union reports its children's single partition, which it keeps
    // only on its row path; the native aggregate must read it that way.
    bothAnsiModes { _ =>
      val d = lit(BigDecimal("10000000000000000000")).cast(DecimalType(38, 18)).as("d")
      val u = spark.range(0, 1, 1, 1).select(d).union(spark.range(0, 11, 1, 1).select(d))
      checkSame(u.agg(sum("d")))
      checkSame(u.agg(avg("d")))
      val small = spark.range(0, 1, 1, 1).select(d).union(spark.range(0, 3, 1, 1).select(d))
      val df = checkSparkAnswerAndNative(small.agg(sum("d"), count(lit(1))), agg)
      assert(
        df.collect().toSeq == Seq(
          Row(new java.math.BigDecimal("40000000000000000000.000000000000000000"), 4L)
        )
      )
    }
  }

  test(
    "small decimals (Spark's UnscaledValue / MakeDecimal rewrite): sum and avg native, every side, both ANSI"
  ) {
    // DecimalAggregates: sum of DECIMAL(p <= 8) becomes MakeDecimal(sum(UnscaledValue(x)), p + 10, s), avg of
    // DECIMAL(p <= 11) a double average of the unscaled values cast back to DECIMAL(p + 4, s + 4).
    val small = when(abs(col("dec")) < 100000, col("dec")) // fits both casts below, also under ANSI
    val df = data.select(
      col("i8"),
      small.cast(DecimalType(8, 2)).as("d8"),
      (col("i8") / 7).cast(DecimalType(5, 3)).as("d5"),
      small.cast(DecimalType(11, 4)).as("d11")
    )
    val sums = Seq(sum("d8"), sum("d5"), count(lit(1)))
    // The averages' final step casts a double to DECIMAL, which stays in Spark on JDK < 19 (docs/compatibility.md):
    // there only their partial aggregate is native.
    val avgs = Seq(avg("d8"), avg("d5"), avg("d11"))
    for (side <- sides; ansi <- Seq("true", "false")) {
      withSQLConf("spark.ember.aggregate.nativeSides" -> side, "spark.sql.ansi.enabled" -> ansi) {
        val grouped = checkSparkAnswerAndNative(df.groupBy("i8").agg(sums.head, sums.tail: _*), agg)
        assert(nativeAggs(grouped).size == (if (side == "both") 2 else 1))
        assert(sparkAggs(grouped).size == (if (side == "both") 0 else 1))
        checkSparkAnswerAndNative(df.agg(sums.head, sums.tail: _*), agg)
        if (side != "final") {
          checkSparkAnswerAndNative(df.groupBy("i8").agg(avgs.head, avgs.tail: _*), agg)
          checkSparkAnswerAndNative(df.agg(avgs.head, avgs.tail: _*), agg)
        }
      }
    }
    withSQLConf("spark.ember.aggregate.adaptivePartial.forcePassThrough.enabled" -> "true") {
      val all = sums ++ avgs
      checkSparkAnswerAndNative(df.groupBy("i8").agg(all.head, all.tail: _*), agg)
    }
  }

  test("decimal avg: Spark's result type, rounding HALF_UP, out of range for DECIMAL(38, s) inputs") {
    val rows = (1 to 40).map(i => (i % 7, bd(s"${i * 13}.${i % 10}1"))) ++
      Seq((8, bd("0.01")), (8, bd("0.01")), (8, bd("0.02")), (9, bd("-0.05")), (9, bd("0.00")))
    for (dt <- Seq(DecimalType(20, 2), DecimalType(36, 2), DecimalType(38, 30))) {
      val df = decimals(rows, dt, 2)
      bothAnsiModes(_ => checkSparkAnswerAndNative(df.groupBy("k").agg(avg("v"), sum("v")), agg))
    }
    // avg of DECIMAL(38, 2) is DECIMAL(38, 6): 32 integral digits, so a large average does not fit.
    val huge = decimals(Seq((1, bd("9" * 34 + ".00")), (2, bd("1.00"))), DecimalType(38, 2), 1)
    bothAnsiModes(_ => checkSame(huge.groupBy("k").agg(avg("v"))))
    // One failing group: the error's value is Spark's, the quotient at 39 places Spark's division computes.
    withSQLConf("spark.sql.ansi.enabled" -> "true", "spark.sql.adaptive.enabled" -> "false") {
      checkSparkErrorAndNative(huge.groupBy("k").agg(avg("v")), agg, exactParameters = true)
    }
  }

  test("try_sum / try_avg of decimals run natively (NULL on overflow in both ANSI modes)") {
    val max38 = bd("9" * 38)
    val df = decimals(Seq((1, max38), (1, max38), (2, bd("5")), (2, null)), DecimalType(38, 0), 2)
    bothAnsiModes { _ =>
      checkSparkAnswerAndNative(df.groupBy("k").agg(expr("try_sum(v)"), expr("try_avg(v)")), agg)
      checkSparkAnswerAndNative(df.agg(expr("try_sum(v)"), expr("try_avg(v)")), agg)
    }
  }

  test("decimal sums never pass through (the association decides overflow); empty input") {
    withSQLConf(
      "spark.ember.aggregate.adaptivePartial.forcePassThrough.enabled" -> "true",
      "spark.sql.ansi.enabled" -> "false"
    ) {
      val df =
        checkSparkAnswerAndNative(data.groupBy("i8").agg(sum("dec38"), avg("dec38"), count(lit(1))), agg)
      val passed = nativeAggs(df).map(_.metrics("rows_passed_through").value).sum
      assert(passed == 0)
      // Functions that may pass through, beside a decimal sum: nothing passes through either.
      val mixed =
        checkSparkAnswerAndNative(data.groupBy("i8").agg(sum("dec"), max("f64"), count(lit(1))), agg)
      assert(nativeAggs(mixed).map(_.metrics("rows_passed_through").value).sum == 0)
    }
    bothAnsiModes { _ =>
      val empty = data.where(col("id") < 0)
      val g = checkSparkAnswerAndNative(empty.agg(sum("dec38"), avg("dec38"), sum("dec")), agg)
      assert(g.collect().toSeq == Seq(Row(null, null, null)))
      checkSparkAnswerAndNative(empty.groupBy("i8").agg(sum("dec38")), agg)
    }
  }

  // ---------------------------------------------------------------- float / double min / max

  private val negNaN = java.lang.Double.longBitsToDouble(0xfff8000000000001L)
  private val payloadNaN = java.lang.Double.longBitsToDouble(0x7ff0000000000abcL)

  private def doubles(rows: Seq[(Int, java.lang.Double)], partitions: Int): DataFrame = {
    val schema = StructType(Seq(StructField("k", IntegerType), StructField("v", DoubleType)))
    spark.createDataFrame(
      spark.sparkContext.parallelize(rows.map { case (k, v) => Row(k, v) }, partitions),
      schema
    )
  }

  /** Groups whose answers depend on Spark's exact order: ties of zeros keep the first, NaN is the largest. */
  private val orderRows: Seq[(Int, java.lang.Double)] = Seq[(Int, java.lang.Double)](
    (1, 0.0),
    (1, -0.0),
    (2, -0.0),
    (2, 0.0),
    (3, Double.PositiveInfinity),
    (3, Double.NaN),
    (3, Double.NegativeInfinity),
    (4, negNaN),
    (4, Double.NegativeInfinity),
    (4, 1.0),
    (5, null),
    (5, -0.0),
    (5, null),
    (6, null),
    (7, payloadNaN),
    (7, Double.NaN),
    (8, Double.MaxValue),
    (8, -Double.MaxValue),
    (8, Double.MinPositiveValue)
  )

  test("min / max of DOUBLE and FLOAT: NaN above +Infinity, first of -0.0 and 0.0 kept, every side") {
    for (partitions <- Seq(1, 2); side <- sides) {
      withSQLConf("spark.ember.aggregate.nativeSides" -> side) {
        bothAnsiModes { _ =>
          val df = doubles(orderRows, partitions).withColumn("f", col("v").cast(FloatType))
          val fs = Seq(min("v"), max("v"), min("f"), max("f"), count("v"))
          val g = checkSparkAnswerAndNative(df.groupBy("k").agg(fs.head, fs.tail: _*), agg)
          assert(sparkAggs(g).size == (if (side == "both") 0 else 1), executedNodes(g))
          checkSparkAnswerAndNative(df.agg(fs.head, fs.tail: _*), agg)
          checkSparkAnswerAndNative(df.where("k IN (1, 2)").agg(min("v"), max("v"), min("f"), max("f")), agg)
        }
      }
    }
    // The random table: NaN, infinities, +-0.0, MaxValue, NULLs.
    val fs = Seq(min("f64"), max("f64"), min("f32"), max("f32"))
    checkSparkAnswerAndNative(data.groupBy("i8").agg(fs.head, fs.tail: _*), agg)
    checkSparkAnswerAndNative(data.agg(fs.head, fs.tail: _*), agg)
  }

  test("min / max of doubles: raw bits of every result equal Spark's, NaN payloads included") {
    val df = doubles(orderRows, 1)
    val q = () => df.groupBy("k").agg(min("v").as("mn"), max("v").as("mx")).orderBy("k")
    def bits(rows: Seq[Row]) = rows.map(r =>
      (
        r.getInt(0),
        Seq(1, 2).map(i =>
          if (r.isNullAt(i)) None else Some(java.lang.Double.doubleToRawLongBits(r.getDouble(i)))
        )
      )
    )
    val expected = bits(withEmber(enabled = false)(q().collect().toSeq))
    val actual = withEmber(enabled = true) {
      val d = q()
      val rows = d.collect().toSeq
      assert(nativeAggs(d).nonEmpty)
      bits(rows)
    }
    assert(actual == expected)
    // Spark keeps the first of tied zeros: group 1 is max 0.0, group 2 max -0.0.
    val byKey = actual.toMap
    assert(byKey(1)(1).contains(java.lang.Double.doubleToRawLongBits(0.0)))
    assert(byKey(2)(1).contains(java.lang.Double.doubleToRawLongBits(-0.0)))
  }

  test("min / max of doubles with forced pass-through") {
    withSQLConf("spark.ember.aggregate.adaptivePartial.forcePassThrough.enabled" -> "true") {
      for (partitions <- Seq(1, 2)) {
        val df = doubles(orderRows, partitions).withColumn("f", col("v").cast(FloatType))
        val g = checkSparkAnswerAndNative(df.groupBy("k").agg(min("v"), max("v"), min("f"), max("f")), agg)
        assert(nativeAggs(g).map(_.metrics("rows_passed_through").value).sum == orderRows.size)
      }
      checkSparkAnswerAndNative(data.groupBy("i8").agg(min("f64"), max("f64"), min("f32"), max("f32")), agg)
    }
  }

  // ---------------------------------------------------------------- float / double grouping keys

  test("FLOAT / DOUBLE grouping keys: all NaNs one group, -0.0 and 0.0 one group, partial aggregate native") {
    val keyRows: Seq[(Int, java.lang.Double)] =
      Seq[java.lang.Double](
        Double.NaN,
        negNaN,
        payloadNaN,
        -0.0,
        0.0,
        0.0,
        -0.0,
        1.5,
        null,
        Double.PositiveInfinity,
        null
      ).zipWithIndex
        .map { case (v, i) => (i, v) }
    for (partitions <- Seq(1, 3); side <- sides) {
      withSQLConf("spark.ember.aggregate.nativeSides" -> side) {
        val df = doubles(keyRows, partitions).withColumn("f", col("v").cast(FloatType))
        val g = checkSparkAnswerAndNative(df.groupBy("v").agg(count(lit(1)), sum("k"), min("k")), agg)
        assert(g.collect().length == 5, g.collect().toSeq) // NaN, 0.0, 1.5, NULL, Infinity
        if (side != "final") {
          assert(nativeAggs(g).exists(_.aggregateExpressions.forall(_.mode.toString == "Partial")))
        }
        checkSparkAnswerAndNative(df.groupBy("f", "k").agg(count(lit(1))), agg)
        // Two keys (DataFusion's multi-column group values do not fold -0.0 into 0.0 by themselves).
        val two = df.withColumn("c", lit(7))
        val g2 = checkSparkAnswerAndNative(two.groupBy("v", "c").agg(count(lit(1)), sum("k")), agg)
        assert(g2.collect().length == 5, g2.collect().toSeq)
        checkSparkAnswerAndNative(two.groupBy("c", "f").agg(count(lit(1)), max("k")), agg)
        checkSparkAnswerAndNative(df.groupBy("f").agg(max("v"), min("v"), count("v")), agg)
      }
    }
    bothAnsiModes { _ =>
      checkSparkAnswerAndNative(data.groupBy("f64").agg(count(lit(1)), sum("i32"), max("f32")), agg)
      checkSparkAnswerAndNative(data.groupBy("f32", "i8").agg(count(lit(1)), min("f64")), agg)
      // DISTINCT over doubles: the de-duplicating aggregates group by the normalized value too.
      checkSparkAnswerAndNative(data.groupBy("i8").agg(countDistinct("f64"), sum("i32")), agg)
    }
    withSQLConf("spark.ember.aggregate.adaptivePartial.forcePassThrough.enabled" -> "true") {
      val g = checkSparkAnswerAndNative(data.groupBy("f64").agg(count(lit(1)), min("f32"), max("i64")), agg)
      assert(nativeAggs(g).map(_.metrics("rows_passed_through").value).sum == 3000)
    }
  }

  // ---------------------------------------------------------------- FILTER clauses

  private def filtered(grouped: Boolean): DataFrame = {
    data.createOrReplaceTempView("agg_filter_t")
    val keys = if (grouped) "i8 % 5 AS g, " else ""
    val groupBy = if (grouped) " GROUP BY i8 % 5" else ""
    spark
      .sql(
        s"""SELECT $keys
           |  count(*) FILTER (WHERE b),
           |  count(s) FILTER (WHERE i32 > 0),
           |  sum(i32) FILTER (WHERE s LIKE 's1%' OR i16 IS NULL),
           |  sum(dec38) FILTER (WHERE i16 < 0),
           |  avg(dec38) FILTER (WHERE dt > DATE'2000-01-01'),
           |  min(f64) FILTER (WHERE NOT b),
           |  max(ts) FILTER (WHERE b IS NULL),
           |  first(i16, true) FILTER (WHERE i64 > 0),
           |  sum(i32)
           |FROM agg_filter_t$groupBy""".stripMargin
      )
      .asInstanceOf[DataFrame]
  }

  test("FILTER clauses: grouped (gated and passed through) and global, both ANSI modes") {
    bothAnsiModes { _ =>
      checkSame(filtered(grouped = true))
      checkSame(filtered(grouped = false))
      withSQLConf("spark.ember.aggregate.adaptivePartial.forcePassThrough.enabled" -> "true") {
        checkSame(filtered(grouped = true))
      }
    }
  }

  test(
    "FILTER over an argument that can raise stays in Spark: Spark evaluates it only where the filter holds"
  ) {
    withSQLConf("spark.sql.ansi.enabled" -> "true") {
      // i32 * 100000 overflows on rows the filter drops; Spark never evaluates it there.
      data.createOrReplaceTempView("agg_filter_raise")
      def f = spark
        .sql(
          "SELECT i8 % 3, sum(i32 * 100000) FILTER (WHERE i32 BETWEEN -1000 AND 1000) FROM agg_filter_raise GROUP BY i8 % 3"
        )
        .asInstanceOf[DataFrame]
      checkSparkAnswerAndNative(f, Nil)
      withEmber(enabled = true) {
        val df = f
        df.collect()
        val reasons = sparkAggs(df).flatMap(EmberExecRule.fallbackReasons)
        assert(reasons.exists(_.contains("FILTER over an argument that can raise")), s"reasons: $reasons")
      }
    }
  }
}
