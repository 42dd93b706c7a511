package org.apache.spark.sql.ember

import scala.collection.mutable.ArrayBuffer
import scala.util.Random

import org.apache.spark.sql.{Column, Row}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Lag, Lead}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Window => LogicalWindow}
import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.ember.rewrite.SlidingFrameSums
import org.apache.spark.sql.execution.SortExec
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.execution.window.WindowExec
import org.apache.spark.sql.expressions.{Window, WindowSpec}
import org.apache.spark.sql.functions._
import org.apache.spark.sql.types._

/**
 * The native window (`EmberPrefixWindowExec`, prefix-difference evaluation) and the Catalyst rewrite
 * (`SlidingSumRewrite`), row for row against Spark: random data with null runs and all-null partitions,
 * partitions shorter than their frames, values near Long.MaxValue whose running prefix wraps, both ANSI modes.
 * ROWS frames are ordered by the unique `id`; ties only under RANGE frames and ranking functions.
 */
class EmberPrefixWindowSuite extends EmberQueryTest {
  import testImplicits._

  private val U = Window.unboundedPreceding
  private val UF = Window.unboundedFollowing
  private val C = Window.currentRow

  /** Every ROWS bound shape: unbounded / n preceding, current row, m following / unbounded following. */
  private val rowFrames: Seq[(Long, Long)] = Seq(
    (U, C),
    (0L, 0L),
    (-2L, 0L),
    (-6L, 0L),
    (-29L, 0L),
    (-5L, -1L),
    (U, -1L),
    (-3L, 2L),
    (-1L, 1L),
    (1L, 3L),
    (0L, UF),
    (2L, UF),
    (U, UF)
  )

  private val schema = StructType(
    Seq(
      StructField("id", LongType, nullable = false),
      StructField("k", IntegerType),
      StructField("t", LongType),
      StructField("v", LongType),
      StructField("i", IntegerType),
      StructField("big", LongType),
      StructField("f", DoubleType),
      StructField("dec", DecimalType(10, 2))
    )
  )

  /**
   * Partitions of 1 to 60 rows (a quarter of them 1–3 rows, shorter than most frames), every 7th all-null,
   * null runs of up to 8 rows elsewhere (all-null frames); `big` is near Long.MaxValue / Long.MinValue;
   * `t` has ties.
   */
  private def windowRows(seed: Long, partitions: Int): Seq[Row] = {
    val r = new Random(seed)
    val rows = ArrayBuffer.empty[Row]
    var id = 0L
    for (k <- 0 until partitions) {
      val len = if (r.nextInt(4) == 0) 1 + r.nextInt(3) else 1 + r.nextInt(60)
      var nullRun = 0
      for (_ <- 0 until len) {
        id += 1
        if (nullRun == 0 && r.nextInt(8) == 0) nullRun = 1 + r.nextInt(8)
        val isNull = k % 7 == 3 || nullRun > 0
        if (nullRun > 0) nullRun -= 1
        def n[T](v: => T): Any = if (isNull) null else v
        rows += Row(
          id,
          if (k == 5) null else k,
          id / 3,
          n((r.nextInt(2001) - 1000).toLong),
          n(r.nextInt(3) match {
            case 0 => Int.MaxValue - r.nextInt(3)
            case 1 => Int.MinValue + r.nextInt(3)
            case _ => r.nextInt(100)
          }),
          n(r.nextInt(3) match {
            case 0 => Long.MaxValue - r.nextInt(5)
            case 1 => Long.MinValue + r.nextInt(5)
            case _ => r.nextInt(100).toLong
          }),
          n(r.nextInt(10) match {
            case 0 => Double.NaN
            case 1 => -0.0
            case _ => r.nextGaussian() * 1e6
          }),
          n(BigDecimal(r.nextInt(100000), 2).bigDecimal)
        )
      }
    }
    rows.toSeq
  }

  private lazy val data: DataFrame = {
    val sc = spark.sparkContext
    val rdd = sc.parallelize(Seq.empty[Row], 1).union(sc.parallelize(windowRows(7, 80), 3))
    spark.createDataFrame(rdd, schema).cache()
  }

  private val byK: WindowSpec = Window.partitionBy("k").orderBy("id")

  private def frameColumns(
      measures: Seq[String],
      fns: Seq[String => Column],
      frames: Seq[(Long, Long)]
  ): Seq[Column] =
    for {
      (m, mi) <- measures.zipWithIndex
      (f, fi) <- fns.zipWithIndex
      ((lo, hi), wi) <- frames.zipWithIndex
    } yield f(m).over(byK.rowsBetween(lo, hi)).as(s"c_${mi}_${fi}_$wi")

  private def windowNodes(df: DataFrame): Seq[EmberPrefixWindowExec] =
    nativeNodes(df).collect { case w: EmberPrefixWindowExec => w }

  private def metric(df: DataFrame, name: String): Long = windowNodes(df).map(_.metrics(name).value).sum

  private def reasons(df: DataFrame): Seq[String] =
    executedNodes(df).collect { case w: WindowExec => w }.flatMap(EmberExecRule.fallbackReasons)

  private val aggregates: Seq[String => Column] =
    Seq(c => sum(col(c)), c => count(col(c)), c => avg(col(c)), c => min(col(c)), c => max(col(c)))

  test("sum, count, avg, min, max over every ROWS frame shape; prefix frames counted") {
    bothAnsiModes { _ =>
      val df = checkSparkAnswerAndNative(
        data.select(col("id") +: frameColumns(Seq("v", "f"), aggregates, rowFrames): _*),
        Seq(cls[EmberPrefixWindowExec], cls[EmberSortExec])
      )
      assert(windowNodes(df).size == 1, "one native operator for every expression over one spec")
      assert(metric(df, "prefix_frames") > 0, "integral frames are evaluated by prefix difference")
      assert(metric(df, "refold_frames") > 0, "double frames are re-folded")
    }
  }

  test("int measures near Int.MaxValue, count(*), sum of expressions") {
    bothAnsiModes { _ =>
      checkSparkAnswerAndNative(
        data.select(
          col("id") +: (frameColumns(Seq("i"), aggregates, rowFrames) ++
            rowFrames.map { case (lo, hi) => count(lit(1)).over(byK.rowsBetween(lo, hi)) } ++
            rowFrames.map { case (lo, hi) => sum(col("v") * 2 + col("i")).over(byK.rowsBetween(lo, hi)) }): _*
        ),
        Seq(cls[EmberPrefixWindowExec])
      )
    }
  }

  test("prefix evaluation switched off: same rows, frames counted as refold") {
    withSQLConf("spark.ember.prefixWindow.prefixDifference.enabled" -> "false") {
      bothAnsiModes { _ =>
        val df = checkSparkAnswerAndNative(
          data.select(col("id") +: frameColumns(Seq("v", "i"), aggregates.take(3), rowFrames): _*),
          Seq(cls[EmberPrefixWindowExec])
        )
        assert(metric(df, "prefix_frames") == 0)
        assert(metric(df, "refold_frames") > 0)
      }
    }
  }

  test("ANSI off: running prefixes near Long.MaxValue wrap, results identical to Spark's wrapping fold") {
    withSQLConf("spark.sql.ansi.enabled" -> "false") {
      val df = checkSparkAnswerAndNative(
        data.select(col("id") +: frameColumns(Seq("big"), aggregates, rowFrames): _*),
        Seq(cls[EmberPrefixWindowExec])
      )
      assert(metric(df, "prefix_frames") > 0)
    }
  }

  /** Spark's outcome (rows or error class) and Ember's must be the same; returns whether Spark failed. */
  private def checkSameOutcome(query: => DataFrame): Boolean = {
    val failed = withEmber(enabled = false) {
      try { query.collect(); false }
      catch { case _: Throwable => true }
    }
    if (failed) checkSparkErrorAndNative(query, Seq(cls[EmberPrefixWindowExec]))
    else checkSparkAnswerAndNative(query, Seq(cls[EmberPrefixWindowExec]))
    failed
  }

  // checkSparkErrorAndNative looks for the native node before the failing collect: without AQE the plan is final
  // then (with AQE the columnar rules run per query stage, during execution). One shuffle partition: the window
  // stage is one task, so no sibling task is still being killed (and holding native memory) when the check
  // for leaked reservations runs after the failure.
  private val ansiNoAqe = Seq(
    "spark.sql.ansi.enabled" -> "true",
    "spark.sql.adaptive.enabled" -> "false",
    "spark.sql.shuffle.partitions" -> "1"
  )

  test("ANSI on: ARITHMETIC_OVERFLOW in exactly the queries where Spark raises it") {
    withSQLConf(ansiNoAqe: _*) {
      val outcomes = rowFrames.map { case (lo, hi) =>
        (lo, hi) -> checkSameOutcome(data.select(col("id"), sum(col("big")).over(byK.rowsBetween(lo, hi))))
      }
      assert(outcomes.exists(_._2), s"some frame must overflow: $outcomes")
      assert(outcomes.exists(!_._2), s"some frame must not overflow: $outcomes")
      // avg folds in double: never an overflow, exact prefixes or refold.
      checkSparkAnswerAndNative(
        data.select(col("id") +: rowFrames.map { case (lo, hi) =>
          avg(col("big")).over(byK.rowsBetween(lo, hi))
        }: _*),
        Seq(cls[EmberPrefixWindowExec])
      )
    }
  }

  test(
    "ANSI on: a frame whose total fits but whose fold overflows raises; the running prefix alone does not"
  ) {
    withSQLConf(ansiNoAqe: _*) {
      val w = Window.partitionBy("k").orderBy("id")
      // Frame (2 PRECEDING, CURRENT ROW) at row 3: MAX + 1 overflows before -2 brings the total back.
      val foldOverflows = Seq((1L, 1, Long.MaxValue), (2L, 1, 1L), (3L, 1, -2L)).toDF("id", "k", "v")
      checkSparkErrorAndNative(
        foldOverflows.select(col("id"), sum(col("v")).over(w.rowsBetween(-2, 0))),
        Seq(cls[EmberPrefixWindowExec])
      )
      // Same values, other order: MAX - 2 + 1 never leaves the range.
      val foldFits = Seq((1L, 1, Long.MaxValue), (2L, 1, -2L), (3L, 1, 1L)).toDF("id", "k", "v")
      checkSparkAnswerAndNative(
        foldFits.select(col("id"), sum(col("v")).over(w.rowsBetween(-2, 0))),
        Seq(cls[EmberPrefixWindowExec])
      )
      // The running prefix MAX + MAX + MIN + MIN overflows; no single-row or two-row frame does.
      val prefixOnly =
        Seq((1L, 1, Long.MaxValue), (2L, 1, Long.MinValue), (3L, 1, Long.MaxValue), (4L, 1, Long.MinValue))
          .toDF("id", "k", "v")
      for ((lo, hi) <- Seq((0L, 0L), (-1L, 0L), (0L, 1L))) {
        val df = checkSparkAnswerAndNative(
          prefixOnly.select(col("id"), sum(col("v")).over(w.rowsBetween(lo, hi))),
          Seq(cls[EmberPrefixWindowExec])
        )
        assert(metric(df, "prefix_frames") > 0)
      }
    }
  }

  test("random types (DataGen): min/max of every supported type, sums and averages") {
    val gen = DataGen.table(spark, 1500).withColumn("p", pmod(col("id"), lit(17)))
    val w = Window.partitionBy("p").orderBy("id")
    val frames = Seq((U, C), (-3L, 0L), (-1L, 2L), (0L, UF))
    def cols(ms: Seq[String], fs: Seq[String => Column]) =
      for (m <- ms; f <- fs; (lo, hi) <- frames) yield f(m).over(w.rowsBetween(lo, hi))
    bothAnsiModes { ansi =>
      checkSparkAnswerAndNative(
        gen.select(
          col("id") +: (cols(
            Seq("i8", "i16", "i32", "i64", "f32", "f64", "dt", "ts", "ntz"),
            aggregates.drop(3)
          ) ++
            cols(Seq("i8", "i16", "i32", "f32", "f64"), aggregates.take(3)) ++
            cols(Seq("s", "dec", "b"), Seq(c => count(col(c))))): _*
        ),
        Seq(cls[EmberPrefixWindowExec])
      )
      if (!ansi) {
        checkSparkAnswerAndNative(
          gen.select(col("id") +: cols(Seq("i64"), aggregates.take(3)): _*),
          Seq(cls[EmberPrefixWindowExec])
        )
      }
    }
  }

  test("row_number, rank, dense_rank, lag / lead with defaults, lag IGNORE NULLS") {
    val byT = Window.partitionBy("k").orderBy("t")
    bothAnsiModes { _ =>
      checkSparkAnswerAndNative(
        data.select(
          col("id"),
          row_number().over(byK),
          rank().over(byT),
          dense_rank().over(byT),
          lag(col("v"), 1).over(byK),
          lag(col("v"), 3, -1L).over(byK),
          lead(col("v"), 2).over(byK),
          lead(col("f"), 1, 0.5).over(byK),
          lag(col("i"), 0).over(byK),
          lag(col("v"), -2).over(byK),
          lead(col("v"), 1, col("big")).over(byK),
          lag(col("v"), 2, null, ignoreNulls = true).over(byK),
          lag(col("dec"), 1).over(byK)
        ),
        Seq(cls[EmberPrefixWindowExec])
      )
      // No partition key: one partition of everything.
      checkSparkAnswerAndNative(
        data.select(
          col("id"),
          row_number().over(Window.orderBy("id")),
          sum("v").over(Window.orderBy("id").rowsBetween(-3, 0))
        ),
        Seq(cls[EmberPrefixWindowExec])
      )
    }
  }

  test("RANGE frames over ties: UNBOUNDED / CURRENT ROW bounds natively") {
    val byT = Window.partitionBy("k").orderBy("t")
    bothAnsiModes { _ =>
      checkSparkAnswerAndNative(
        data.select(
          col("id"),
          sum("v").over(byT),
          count("v").over(byT),
          avg("i").over(byT),
          max("f").over(byT.rangeBetween(C, UF)),
          min("v").over(byT.rangeBetween(C, C)),
          sum("v").over(byT.rangeBetween(U, UF)),
          sum("v").over(Window.partitionBy("k"))
        ),
        Seq(cls[EmberPrefixWindowExec])
      )
    }
  }

  test("empty input and empty partitions") {
    bothAnsiModes { _ =>
      checkSparkAnswerAndNative(
        data
          .where(col("id") < 0)
          .select(col("id") +: frameColumns(Seq("v"), aggregates, rowFrames.take(4)): _*),
        Seq(cls[EmberPrefixWindowExec])
      )
    }
  }

  test("unsupported shapes fall back to Spark with a reason") {
    val byT = Window.partitionBy("k").orderBy("t")
    val cases: Seq[(Column, String)] = Seq(
      sum("dec").over(byK.rowsBetween(-2, 0)) -> "sum over decimal",
      sum("v").over(byT.rangeBetween(-2, 0)) -> "RANGE frame bound",
      lead(col("v"), 1, null, ignoreNulls = true).over(byK) -> "lead IGNORE NULLS",
      first("v").over(byK) -> "not supported natively",
      min("dec").over(byK) -> "min over decimal"
    )
    for ((c, reason) <- cases) {
      val df = checkSparkAnswerAndNative(data.select(col("id"), c), Nil)
      assert(windowNodes(df).isEmpty)
      assert(reasons(df).exists(_.contains(reason)), s"expected '$reason' in ${reasons(df)}")
    }
    withSQLConf("spark.sql.windowExec.buffer.spill.threshold" -> "100") {
      val df = checkSparkAnswerAndNative(data.select(col("id"), sum("v").over(byK.rowsBetween(-2, 0))), Nil)
      assert(windowNodes(df).isEmpty)
      assert(reasons(df).exists(_.contains("cannot spill a partition")))
    }
    withSQLConf("spark.ember.exec.prefixWindow.enabled" -> "false") {
      val df = checkSparkAnswerAndNative(data.select(col("id"), sum("v").over(byK.rowsBetween(-2, 0))), Nil)
      assert(windowNodes(df).isEmpty)
      assert(reasons(df).exists(_.contains("spark.ember.exec.prefixWindow.enabled is false")))
    }
  }

  // ------------------------------------------------------------------------------------------------------
  // The Catalyst rewrite.

  private val rewriteOn = "spark.ember.slidingSumRewrite.enabled" -> "true"

  private def optimizedWindows(df: DataFrame): Seq[LogicalWindow] =
    df.queryExecution.optimizedPlan.collect { case w: LogicalWindow => w }

  private def offsetFunctions(df: DataFrame): Int =
    optimizedWindows(df).flatMap(_.windowExpressions).map(_.collect { case _: Lag | _: Lead => 1 }.size).sum

  private def frameSums(df: DataFrame): Int =
    optimizedWindows(df)
      .flatMap(_.windowExpressions)
      .map(_.collect { case _: SlidingFrameSums => 1 }.size)
      .sum

  private val slidingFrames =
    Seq((-2L, 0L), (-6L, 0L), (-29L, 0L), (0L, 0L), (-5L, -1L), (-3L, 2L), (1L, 3L), (2L, UF))

  private def sliding(measures: Seq[String]): Seq[Column] =
    for (m <- measures; (lo, hi) <- slidingFrames) yield sum(col(m)).over(byK.rowsBetween(lo, hi))

  /** Spark without the rule vs Spark with it (Ember's native execution off in both). */
  private def checkRewrite(query: => DataFrame, rewritten: Boolean): DataFrame = {
    withEmber(enabled = false) {
      val expected = query.collect().toSeq
      val before = query
      // Planned now, with the rule off (query plans are lazy).
      val beforePlan = before.queryExecution.optimizedPlan
      val beforeOffsets = offsetFunctions(before)
      val beforeExchanges = collectWithSubqueries(before.queryExecution.executedPlan) {
        case e: ShuffleExchangeExec => e
      }.size
      withSQLConf(rewriteOn) {
        val df = query
        val actual = df.collect().toSeq
        assert(
          exact(actual).sortBy(_.toString) == exact(expected).sortBy(_.toString),
          df.queryExecution.optimizedPlan
        )
        if (rewritten) {
          assert(
            offsetFunctions(df) > beforeOffsets || frameSums(df) > 0,
            s"expected the rewrite:\n${df.queryExecution.optimizedPlan}"
          )
          val plan = df.queryExecution.executedPlan
          val exchanges = collectWithSubqueries(plan) { case e: ShuffleExchangeExec => e }.size
          val sorts = collectWithSubqueries(plan) { case s: SortExec => s }.size
          assert(exchanges == beforeExchanges, s"no new exchange:\n$plan")
          assert(sorts == 1, s"one sort:\n$plan")
        } else {
          def shape(p: LogicalPlan) = p.toString.replaceAll("#\\d+", "#")
          assert(
            shape(df.queryExecution.optimizedPlan) == shape(beforePlan),
            s"plan must be untouched:\n${df.queryExecution.optimizedPlan}"
          )
        }
        df
      }
    }
  }

  test("rewrite: qualifying sliding sums (ANSI off) become running sums + lag/lead differences, same rows") {
    withSQLConf("spark.sql.ansi.enabled" -> "false") {
      // Nulls, all-null frames, short partitions, n = 0, FOLLOWING bounds, wrapping near Long.MaxValue.
      val mixed = checkRewrite(data.select(col("id") +: sliding(Seq("v", "i", "big")): _*), rewritten = true)
      // Frames ending at or before the current row: one SlidingFrameSums; FOLLOWING ends: lag / lead.
      assert(frameSums(mixed) == 1 && offsetFunctions(mixed) > 0, mixed.queryExecution.optimizedPlan)
      val preceding = checkRewrite(
        data.select(
          col("id") +: (for (m <- Seq("v", "i", "big"); (lo, hi) <- slidingFrames if hi <= 0)
            yield sum(col(m)).over(byK.rowsBetween(lo, hi))): _*
        ),
        rewritten = true
      )
      assert(
        frameSums(preceding) == 1 && offsetFunctions(preceding) == 0,
        preceding.queryExecution.optimizedPlan
      )
      // A frame wider than SlidingFrameSums' ring stays with lags.
      val wide =
        checkRewrite(data.select(col("id"), sum("v").over(byK.rowsBetween(-5000, 0))), rewritten = true)
      assert(frameSums(wide) == 0 && offsetFunctions(wide) > 0, wide.queryExecution.optimizedPlan)
      // Mixed with expressions the rule keeps (float sum, count, lag, row_number).
      checkRewrite(
        data.select(
          col("id") +: (sliding(Seq("v")) ++
            Seq(
              sum("f").over(byK.rowsBetween(-3, 0)),
              count("v").over(byK.rowsBetween(-3, 0)),
              lag("v", 1).over(byK),
              row_number().over(byK)
            )): _*
        ),
        rewritten = true
      )
      // Byte / short measures (DataGen), its own partitioning.
      val gen = DataGen.table(spark, 800).withColumn("p", pmod(col("id"), lit(5)))
      val w = Window.partitionBy("p").orderBy("id")
      checkRewrite(
        gen.select(
          col("id") +: (for (m <- Seq("i8", "i16", "i32", "i64"); (lo, hi) <- slidingFrames)
            yield sum(m).over(w.rowsBetween(lo, hi))): _*
        ),
        rewritten = true
      )
      // And the rewritten plan run by Ember's native window gives Spark's rows too.
      withSQLConf(rewriteOn) {
        val native = checkSparkAnswerAndNative(
          data.select(col("id") +: sliding(Seq("v", "big")): _*),
          Seq(cls[EmberPrefixWindowExec])
        )
        assert(frameSums(native) == 0, "the native window gets the lag form")
      }
    }
  }

  test(
    "rewrite: plans untouched with ANSI on, float / decimal measures, DISTINCT-free sums below the width"
  ) {
    withSQLConf("spark.sql.ansi.enabled" -> "true") {
      checkRewrite(data.select(col("id") +: sliding(Seq("v")): _*), rewritten = false)
    }
    withSQLConf("spark.sql.ansi.enabled" -> "false") {
      checkRewrite(data.select(col("id") +: sliding(Seq("f")): _*), rewritten = false)
      checkRewrite(data.select(col("id") +: sliding(Seq("dec")): _*), rewritten = false)
      // Total width 3 + 1 < 16.
      checkRewrite(
        data.select(col("id"), sum("v").over(byK.rowsBetween(-2, 0)), sum("v").over(byK.rowsBetween(0, 0))),
        rewritten = false
      )
      withSQLConf("spark.ember.slidingSumRewrite.minTotalWidth" -> "2") {
        checkRewrite(data.select(col("id"), sum("v").over(byK.rowsBetween(-2, 0))), rewritten = true)
      }
      // Running and RANGE frames are not sliding sums.
      checkRewrite(
        data.select(
          col("id"),
          sum("v").over(byK.rowsBetween(U, C)),
          sum("v").over(Window.partitionBy("k").orderBy("t"))
        ),
        rewritten = false
      )
    }
  }

  test(
    "rewrite: SlidingFrameSums matches a wrapping refold past its ring, and across serialize / deserialize"
  ) {
    val rnd = new Random(7)
    val frames = Seq((-29, 0), (-5, -1), (0, 0), (-300, -100), (-2, -2)).zipWithIndex.map {
      case ((lo, hi), i) =>
        SlidingFrameSums.Frame(i % 2, lo, hi)
    }
    val agg =
      SlidingFrameSums(Seq(BoundReference(0, LongType, true), BoundReference(1, IntegerType, true)), frames)
    // 2000 rows: the 300-row frame's ring (512) wraps several times; null runs make all-null frames.
    val rows = (0 until 2000).map { r =>
      val v: java.lang.Long =
        if ((r / 40) % 5 == 0 || rnd.nextInt(10) == 0) null
        else Seq(Long.MaxValue, Long.MinValue, rnd.nextLong(), -1L)(rnd.nextInt(4))
      val i: Integer = if (rnd.nextInt(3) == 0) null else Int.box(rnd.nextInt())
      (v, i)
    }
    var state = agg.createAggregationBuffer()
    rows.indices.foreach { r =>
      state = agg.update(state, InternalRow(rows(r)._1, rows(r)._2))
      if (r == 777) state = agg.deserialize(agg.serialize(state))
      val out = agg.eval(state).asInstanceOf[InternalRow]
      frames.zipWithIndex.foreach { case (f, j) =>
        val values = (math.max(0, r + f.lower) to r + f.upper)
          .flatMap(x => Option(if (f.measure == 0) rows(x)._1 else rows(x)._2).map(_.longValue()))
        val expected = if (values.isEmpty) None else Some(values.foldLeft(0L)(_ + _))
        val actual = if (out.isNullAt(j)) None else Some(out.getLong(j))
        assert(actual == expected, s"row $r frame $f")
      }
    }
  }

  test("rewrite: DISTINCT and FILTER sums in SQL are left alone") {
    withSQLConf("spark.sql.ansi.enabled" -> "false") {
      data.createOrReplaceTempView("wdata")
      // Spark rejects DISTINCT in window aggregates at analysis: nothing to rewrite either way.
      val distinct = intercept[Throwable] {
        withSQLConf(rewriteOn) {
          spark
            .sql(
              "SELECT sum(DISTINCT v) OVER (PARTITION BY k ORDER BY id ROWS BETWEEN 29 PRECEDING AND CURRENT ROW) FROM wdata"
            )
            .collect()
        }
      }
      assert(distinct.getMessage.toUpperCase.contains("DISTINCT"))
      val filtered = intercept[Throwable] {
        withSQLConf(rewriteOn) {
          spark
            .sql(
              "SELECT sum(v) FILTER (WHERE v > 0) OVER (PARTITION BY k ORDER BY id ROWS BETWEEN 29 PRECEDING AND CURRENT ROW) FROM wdata"
            )
            .collect()
        }
      }
      assert(filtered.getMessage.toUpperCase.contains("FILTER"))
      checkRewrite(
        spark.sql(
          "SELECT id, sum(v) OVER (PARTITION BY k ORDER BY id ROWS BETWEEN 29 PRECEDING AND CURRENT ROW) FROM wdata"
        ),
        rewritten = true
      )
    }
  }
}
