package org.apache.spark.sql.ember

import org.apache.spark.sql.Row
import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.functions._
import org.apache.spark.sql.types._

/**
 * Native hash aggregates (partial, partial-merge, final) against Spark's, on random data with nulls and
 * extremes: every supported function, grouped and global, both ANSI modes, mixed native/Spark plans, the
 * forced pass-through of the adaptive partial aggregate, and what falls back.
 */
class EmberAggregateSuite extends EmberQueryTest {

  private lazy val data: DataFrame = DataGen.table(spark, 3000).cache()

  /** One input partition: first/last are then deterministic in Spark too (one partial state per group). */
  private lazy val ordered: DataFrame = DataGen.table(spark, 2000, partitions = 1).cache()

  private val agg = Seq(cls[EmberAggregateExec])

  private val numericCols = Seq("i8", "i16", "i32", "i64", "f32", "f64")
  // Strings and binaries make Spark plan a sort aggregate (their buffers are not fixed-width): see below.
  private val minMaxCols = Seq("b", "i8", "i16", "i32", "i64", "dec", "dec38", "dt", "ts", "ntz")

  private def allFunctions(df: DataFrame): Seq[org.apache.spark.sql.Column] =
    Seq(count(lit(1)).as("cnt"), count(col("i32")).as("cnt_i32"), count(col("s")).as("cnt_s")) ++
      numericCols.flatMap(c => Seq(sum(col(c)).as(s"sum_$c"), avg(col(c)).as(s"avg_$c"))) ++
      minMaxCols.flatMap(c => Seq(min(col(c)).as(s"min_$c"), max(col(c)).as(s"max_$c")))

  /** Legacy mode: integral sums wrap around (the random data overflows some groups). */
  test("grouped: every function, keys of several types, ANSI off") {
    withSQLConf("spark.sql.ansi.enabled" -> "false") {
      for (keys <- Seq(Seq("i8"), Seq("s"), Seq("b", "dt"), Seq("dec"), Seq("bin", "i16"), Seq("ts"))) {
        val fs = allFunctions(data)
        checkSparkAnswerAndNative(data.groupBy(keys.map(col): _*).agg(fs.head, fs.tail: _*), agg)
      }
    }
  }

  test("grouped and global: every function except overflowing sums, both ANSI modes") {
    bothAnsiModes { _ =>
      // i64 holds Long.MIN/MAX: its sum overflows; the other integral sums cannot.
      val fs = allFunctions(data).filterNot(_.toString.contains("sum_i64"))
      checkSparkAnswerAndNative(data.groupBy(col("i8")).agg(fs.head, fs.tail: _*), agg)
      checkSparkAnswerAndNative(data.agg(fs.head, fs.tail: _*), agg)
    }
  }

  test("global aggregate of empty input: one row (count 0, NULL sums), both ANSI modes") {
    bothAnsiModes { _ =>
      val empty = data.where(col("id") < 0)
      val fs = allFunctions(empty)
      val df = checkSparkAnswerAndNative(empty.agg(fs.head, fs.tail: _*), agg)
      assert(df.collect().length == 1)
      assert(df.collect().head.getLong(0) == 0L)
      // Grouped over empty input: no rows.
      checkSparkAnswerAndNative(empty.groupBy("i8").agg(count(lit(1)), sum("i32")), agg)
    }
  }

  test("groups whose values are all NULL: sum/avg/min/max NULL, count 0") {
    bothAnsiModes { _ =>
      val df = data.select(col("i8"), when(col("i8") > 0, col("i32")).as("v"), col("dt"))
      checkSparkAnswerAndNative(
        df.groupBy("i8")
          .agg(count("v"), sum("v"), avg("v"), min("v"), max("v"), max(when(col("v") > 0, col("dt")))),
        agg
      )
    }
  }

  test("sum of BIGINT overflow: Spark's ARITHMETIC_OVERFLOW under ANSI, wrap-around otherwise") {
    val big = spark
      .range(0, 1000, 1, 2)
      .select((col("id") % 3).as("k"), (lit(Long.MaxValue) - col("id")).as("v"))
    // Without AQE the plan checked before running is the one that runs.
    withSQLConf("spark.sql.ansi.enabled" -> "true", "spark.sql.adaptive.enabled" -> "false") {
      assert(checkSparkErrorAndNative(big.groupBy("k").agg(sum("v")), agg) == "ARITHMETIC_OVERFLOW")
      assert(checkSparkErrorAndNative(big.agg(sum("v")), agg) == "ARITHMETIC_OVERFLOW")
    }
    withSQLConf("spark.sql.ansi.enabled" -> "false") {
      checkSparkAnswerAndNative(big.groupBy("k").agg(sum("v"), avg("v")), agg)
      checkSparkAnswerAndNative(big.agg(sum("v")), agg)
    }
    // Overflow only when merging partial sums (each partition's sum fits): the native final raises too.
    val halves = spark.range(0, 2, 1, 2).select(lit(1).as("k"), (lit(Long.MaxValue) - col("id")).as("v"))
    withSQLConf(
      "spark.sql.ansi.enabled" -> "true",
      "spark.sql.adaptive.enabled" -> "false",
      "spark.ember.aggregate.nativeSides" -> "final"
    ) {
      assert(checkSparkErrorAndNative(halves.groupBy("k").agg(sum("v")), agg) == "ARITHMETIC_OVERFLOW")
    }
  }

  test("sum and avg of doubles: NaN, infinities, -0.0, in Spark's order of addition") {
    bothAnsiModes { _ =>
      val d = data.select(col("i8"), col("f64"), col("f32"), (col("f64") * 1e300).as("huge"))
      checkSparkAnswerAndNative(
        d.groupBy("i8").agg(sum("f64"), avg("f64"), sum("f32"), sum("huge"), avg("huge")),
        agg
      )
      checkSparkAnswerAndNative(d.agg(sum("f64"), avg("f64"), sum("f32"), avg("huge")), agg)
      val zeros = spark.createDataFrame(
        spark.sparkContext.parallelize(Seq(Row(1, -0.0), Row(1, -0.0), Row(2, -0.0), Row(2, null)), 1),
        StructType(Seq(StructField("k", IntegerType), StructField("v", DoubleType)))
      )
      checkSparkAnswerAndNative(zeros.groupBy("k").agg(sum("v"), avg("v")), agg)
    }
  }

  test("first / last, with and without ignoring nulls") {
    bothAnsiModes { _ =>
      val fs = Seq("i32", "b", "f64", "dec", "ts").flatMap(c =>
        Seq(first(c), first(c, ignoreNulls = true), last(c), last(c, ignoreNulls = true))
      )
      checkSparkAnswerAndNative(ordered.groupBy("i8").agg(fs.head, fs.tail: _*), agg)
      checkSparkAnswerAndNative(ordered.agg(fs.head, fs.tail: _*), agg)
    }
  }

  test("DISTINCT aggregates (Spark's de-duplicating aggregates run natively)") {
    bothAnsiModes { _ =>
      checkSparkAnswerAndNative(
        data.groupBy("i8").agg(count_distinct(col("i16")), sum("i32"), count(lit(1))),
        agg
      )
      checkSparkAnswerAndNative(data.agg(count_distinct(col("s")), sum_distinct(col("i16"))), agg)
      checkSparkAnswerAndNative(data.select("i8", "s").distinct(), agg)
    }
  }

  test("result expressions of the final aggregate are evaluated natively") {
    bothAnsiModes { _ =>
      checkSparkAnswerAndNative(
        data
          .groupBy(col("i8"))
          .agg(
            (count(lit(1)) + 1).as("c1"),
            coalesce(max("i32"), lit(-1)).as("m"),
            (col("i8") === 1).as("one")
          ),
        agg
      )
    }
  }

  test("mixed plans: native partial + Spark final, and Spark partial + native final") {
    for (side <- Seq("partial", "final")) {
      withSQLConf("spark.ember.aggregate.nativeSides" -> side, "spark.sql.ansi.enabled" -> "false") {
        val fs = allFunctions(data)
        val queries =
          Seq(() => data.groupBy("i16").agg(fs.head, fs.tail: _*), () => data.agg(fs.head, fs.tail: _*))
        for (query <- queries) {
          val df = checkSparkAnswerAndNative(query(), agg)
          val nodes = executedNodes(df)
          val native = nodes.collect { case e: EmberAggregateExec => e }
          val spark = nodes.collect {
            case a: BaseAggregateExec if !a.isInstanceOf[EmberAggregateExec] => a
          }
          assert(native.nonEmpty && spark.nonEmpty, s"expected one native and one Spark aggregate:\n$nodes")
          val nativeIsPartial = native.forall(_.aggregateExpressions.forall(_.mode.toString == "Partial"))
          assert(nativeIsPartial == (side == "partial"))
        }
        val ffs = Seq(first("i32"), last("dt", ignoreNulls = true), avg("i64"), count(lit(1)))
        checkSparkAnswerAndNative(ordered.groupBy("i8").agg(ffs.head, ffs.tail: _*), agg)
      }
    }
  }

  test("forced pass-through: Spark's rows, and the metric counts every input row") {
    withSQLConf(
      "spark.ember.aggregate.adaptivePartial.forcePassThrough.enabled" -> "true",
      "spark.sql.ansi.enabled" -> "false"
    ) {
      // Everything but floating-point sums and averages, which never pass through (see below).
      val fs = allFunctions(data).filterNot(c => Seq("avg_", "sum_f").exists(c.toString.contains))
      def passed(df: DataFrame) =
        nativeNodes(df).collect { case a: EmberAggregateExec =>
          a.metrics("rows_passed_through").value
        }.sum
      val df = checkSparkAnswerAndNative(data.groupBy("i8").agg(fs.head, fs.tail: _*), agg)
      assert(passed(df) == 3000, s"rows passed through: ${passed(df)}")
      // Passing through would re-associate double additions in the final aggregate: such partials combine.
      val doubles =
        checkSparkAnswerAndNative(data.groupBy("i8").agg(sum("f64"), avg("i32"), count(lit(1))), agg)
      assert(passed(doubles) == 0)
      for (side <- Seq("partial", "both")) {
        withSQLConf("spark.ember.aggregate.nativeSides" -> side) {
          val ffs = Seq(first("i32"), last("dt"), sum("i16"), min("dec"), count("b"))
          checkSparkAnswerAndNative(ordered.groupBy("i8").agg(ffs.head, ffs.tail: _*), agg)
        }
      }
    }
  }

  test("the gate switches on near-unique keys and keeps combining on few keys") {
    withSQLConf("spark.ember.aggregate.adaptivePartial.minRows" -> "1000") {
      val unique = spark.range(0, 40000, 1, 2).select(col("id").as("k"), (col("id") % 7).as("v"))
      val df = checkSparkAnswerAndNative(unique.groupBy("k").agg(sum("v"), count(lit(1))), agg)
      def metric(d: DataFrame, name: String) =
        nativeNodes(d).collect { case a: EmberAggregateExec => a.metrics(name).value }.sum
      assert(metric(df, "switches_to_pass_through") >= 1)
      assert(metric(df, "rows_passed_through") > 0)
      val few = spark.range(0, 40000, 1, 2).select((col("id") % 100).as("k"), col("id").as("v"))
      val df2 = checkSparkAnswerAndNative(few.groupBy("k").agg(sum("v"), count(lit(1))), agg)
      assert(metric(df2, "switches_to_pass_through") == 0)
      assert(metric(df2, "rows_passed_through") == 0)
    }
  }

  test("radix merge: final and partial-merge aggregates past minGroups split into partitions, same rows") {
    def metric(d: DataFrame, name: String) =
      nativeNodes(d).collect { case a: EmberAggregateExec => a.metrics(name).value }.sum
    withSQLConf("spark.ember.aggregate.radix.minGroups" -> "64") {
      bothAnsiModes { ansi =>
        // ~750 groups per final task (4 shuffle partitions), most of them one row.
        val fs = allFunctions(data).filterNot(c => ansi && c.toString.contains("sum_i64"))
        val keys = Seq((col("id") % 1000).as("g"), col("s"))
        val df = checkSparkAnswerAndNative(data.groupBy(keys: _*).agg(fs.head, fs.tail: _*), agg)
        assert(metric(df, "radix_partitions") > 0, "the final aggregate split its table")
        // count(DISTINCT) adds partial-merge aggregates. (The query is built inside the call: run twice, Ember off
        // then on, a DataFrame built once would keep its first physical plan.)
        val distinct = checkSparkAnswerAndNative(
          data.groupBy((col("i32") % 500).as("g")).agg(countDistinct("i16"), sum("i8"), max("dec")),
          agg
        )
        assert(metric(distinct, "radix_partitions") > 0)
      }
      // first/last: one input partition keeps Spark's own answer deterministic.
      val ffs =
        Seq(first("i32"), last("dt"), first("i64", ignoreNulls = true), last("dec", ignoreNulls = true))
      checkSparkAnswerAndNative(ordered.groupBy((col("id") % 700).as("g")).agg(ffs.head, ffs.tail: _*), agg)
      withSQLConf("spark.ember.aggregate.radix.firstSeenOrder.enabled" -> "true") {
        val fs = allFunctions(data).filterNot(_.toString.contains("sum_i64"))
        val df =
          checkSparkAnswerAndNative(data.groupBy((col("id") % 1000).as("g")).agg(fs.head, fs.tail: _*), agg)
        assert(metric(df, "radix_partitions") > 0, "split, groups emitted in first-seen order")
      }
      withSQLConf("spark.ember.aggregate.radix.enabled" -> "false") {
        val off = checkSparkAnswerAndNative(data.groupBy("id").agg(count(lit(1)), max("i64")), agg)
        assert(metric(off, "radix_partitions") == 0, "switched off: one table")
      }
    }
  }

  test(
    "string and binary min/max: Spark's sort aggregate, replaced when order cannot matter; output sorted"
  ) {
    bothAnsiModes { ansi =>
      val fs = Seq(min("s"), max("s"), min("bin"), max("bin"), count("s"), max("i32"))
      val df = checkSparkAnswerAndNative(data.groupBy("i8").agg(fs.head, fs.tail: _*), agg, ordered = false)
      assert(executedNodes(df).exists(_.isInstanceOf[EmberSortExec]), "the groups are sorted as Spark's were")
      // A parent relying on the sort aggregate's ordering: a merge join on the grouping key.
      withSQLConf("spark.sql.autoBroadcastJoinThreshold" -> "-1") {
        val left = data.groupBy("i16").agg(max("s").as("ms"))
        val right = data.groupBy("i16").agg(min("bin").as("mb"))
        checkSparkAnswerAndNative(left.join(right, "i16"), agg)
      }
      // Order-dependent functions stay in Spark's sort aggregate.
      val sensitive = data.groupBy("i8").agg(first("s"), sum("i32"), avg("i16"))
      sensitive.collect()
      val reasons = executedNodes(sensitive).flatMap(EmberExecRule.fallbackReasons)
      assert(reasons.exists(_.contains("depends on the order")), reasons)
      if (!ansi) checkSparkAnswerAndNative(data.groupBy("i8").agg(max("s"), sum("i64"), count(lit(1))), agg)
      // Without grouping keys Spark does not sort: every function runs natively.
      checkSparkAnswerAndNative(data.agg(max("s"), sum("i32"), avg("i16"), count(lit(1))), agg)
    }
  }

  test("falls back with a reason: TRY, a FILTER over an argument that can raise, other functions") {
    withSQLConf("spark.sql.ansi.enabled" -> "false") { fallbacks() }
  }

  private def fallbacks(): Unit = {
    def reasons(df: DataFrame): Seq[String] = {
      df.collect()
      executedNodes(df).collect { case a: BaseAggregateExec => EmberExecRule.fallbackReasons(a) }.flatten
    }
    def assertFallback(df: DataFrame, fragment: String): Unit = {
      val r = reasons(df)
      assert(
        r.exists(_.toLowerCase.contains(fragment.toLowerCase)),
        s"no reason containing '$fragment' in $r"
      )
      checkAnswer(df, withEmber(enabled = false)(df.collect().toSeq))
    }
    assertFallback(data.groupBy("i8").agg(expr("try_sum(i32)")), "try")
    // Spark evaluates a filtered function's argument only where the filter holds (FILTERs run natively).
    assertFallback(
      data.groupBy("i8").agg(expr("sum(i32 * 2) FILTER (WHERE i32 > 0)")),
      "FILTER over an argument that can raise"
    )
    assertFallback(data.groupBy("i8").agg(collect_list("i32")), "collect_list")
    // No keys and no functions (one row of no columns in Spark).
    assertFallback(data.agg(Map.empty[String, String]), "without grouping keys and functions")
  }

  test("exec switch: spark.ember.exec.aggregate.enabled=false keeps Spark's aggregates") {
    withSQLConf("spark.ember.exec.aggregate.enabled" -> "false") {
      val df = data.groupBy("i8").agg(count(lit(1)))
      df.collect()
      assert(!nativeNodes(df).exists(_.isInstanceOf[EmberAggregateExec]))
    }
  }
}
