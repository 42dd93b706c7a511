package org.apache.spark.sql.ember

import org.apache.spark.sql.Row
import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.functions._
import org.apache.spark.sql.types._

/**
 * `date_format` and `from_unixtime` with Spark's datetime patterns, Ember off vs on, in region zones (DST gaps
 * and overlaps, a 30-minute DST) and fixed ones, over years from BCE to beyond 9999; patterns the engine does
 * not take stay in Spark, which formats them or raises its own error.
 */
class EmberDatetimeFormatSuite extends EmberQueryTest {

  /** Ember off vs on, every projection native. */
  private def native(query: => DataFrame): DataFrame = {
    val df = checkSparkAnswerAndNative(query, Seq(cls[EmberProjectExec]))
    assert(
      !executedNodes(df).exists(_.isInstanceOf[org.apache.spark.sql.execution.ProjectExec]),
      executedNodes(df).flatMap(EmberExecRule.fallbackReasons).mkString("; ")
    )
    df
  }

  private val zones = Seq("UTC", "America/Los_Angeles", "Asia/Kolkata", "Australia/Lord_Howe", "+05:30")

  private val patterns = Seq(
    "yyyy-MM-dd HH:mm:ss",
    "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
    "yyyyMMdd",
    "yy/M/d h:m:s a",
    "EEEE, MMMM d, yyyy",
    "EEE MMM dd E",
    "D DD DDD",
    "QQQ QQQQ Q qq q",
    "G yyyy y yy",
    "GGGG yyy",
    "y yyy yyyyy yyyyyy",
    "HH:mm:ss.SSS",
    "k kk K KK h hh H",
    "''yyyy'' 'o''clock' ''",
    "'Q'Q 'at' HH",
    "LLL LLLL L LL",
    "dd.MM.yyyy",
    "S SS SSSS SSSSSSSSS",
    "MMM",
    "",
    "é yyyy ü 😀"
  )

  private def micros: Seq[java.lang.Long] = {
    val rnd = new scala.util.Random(17)
    // From year -2000 to year 12000.
    val (lo, hi) = (-125000000000000000L, 316000000000000000L)
    val random = Seq.fill(300)(lo + (rnd.nextDouble() * (hi - lo)).toLong + rnd.nextInt(1000000))
    val edges = Seq(
      0L,
      -1L,
      1710064800000000L, // 2024-03-10 10:00 UTC: Los Angeles' spring-forward gap
      1730624400000000L, // 2024-11-03 09:00 UTC: Los Angeles' fall-back overlap
      1730626200000001L,
      -62135596800000000L, // 0001-01-01
      -62135596800000001L,
      253402300799999999L, // 9999-12-31 23:59:59.999999
      253402300800000000L, // 10000-01-01
      -2208988800000000L, // 1900-01-01
      -8334632851200000000L / 1000, // year -262144 region
      9223372036854775L * 1000 // near the largest timestamp
    )
    (random ++ edges).map(java.lang.Long.valueOf) :+ null
  }

  private def table: DataFrame = {
    val rows = micros.zipWithIndex.map { case (m, i) => Row(i.toLong, m) }
    spark
      .createDataFrame(
        spark.sparkContext.parallelize(rows, 2),
        StructType(Seq(StructField("id", LongType), StructField("us", LongType)))
      )
      .select(col("id"), col("us"), expr("timestamp_micros(us)").as("ts"))
  }

  test("date_format with Spark's pattern letters in every zone: Spark's text") {
    for (zone <- zones) withSQLConf("spark.sql.session.timeZone" -> zone) {
      val formats = patterns.zipWithIndex.map { case (p, i) => date_format(col("ts"), p).as(s"f$i") }
      native(table.select(col("id") +: formats: _*))
    }
  }

  test("from_unixtime (default and given patterns, wrapping seconds) and date_format of dates") {
    for (zone <- Seq("UTC", "America/Los_Angeles")) withSQLConf("spark.sql.session.timeZone" -> zone) {
      native(
        table.select(
          col("id"),
          from_unixtime(col("us") / 1000000 cast LongType).as("a"),
          from_unixtime(col("us") / 1000 cast LongType, "yyyy-MM-dd HH:mm EEEE").as("b"),
          from_unixtime(lit(Long.MaxValue) - col("id")).as("c"),
          from_unixtime(col("us"), null).as("d"),
          date_format(col("ts").cast(DateType), "yyyy-MM-dd EEE D").as("e"),
          date_format(col("ts"), null).as("f")
        )
      )
    }
  }

  test("convert_timezone across DST gaps and overlaps, fixed offsets and NULL zones") {
    withSQLConf("spark.sql.session.timeZone" -> "UTC") {
      val pairs = Seq(
        ("America/Los_Angeles", "Asia/Kolkata"),
        ("Europe/Berlin", "America/Los_Angeles"),
        ("Australia/Lord_Howe", "UTC"),
        ("+05:30", "America/New_York")
      )
      val cols = pairs.zipWithIndex.map { case ((from, to), i) =>
        expr(s"convert_timezone('$from', '$to', cast(ts as timestamp_ntz))").as(s"c$i")
      } :+ expr("convert_timezone(cast(null as string), 'UTC', cast(ts as timestamp_ntz))").as("n")
      native(
        table.where(col("us").between(-2208988800000000L, 4102444800000000L)).select(col("id") +: cols: _*)
      )
    }
  }

  test("patterns Spark or Java rejects, zone letters and non-literal patterns stay in Spark") {
    val rejected = Seq("YYYY", "ww", "u", "e", "A", "MMMMM", "yyyyyyy", "ddd", "'open", "[yyyy]")
    for (p <- rejected) {
      val q = () => table.select(col("id"), date_format(col("ts"), p))
      scala.util.Try(withEmber(enabled = false)(q().collect())) match {
        case scala.util.Success(_) =>
          val df = checkSparkAnswerAndNative(q(), Nil)
          assert(!nativeNodes(df).exists(_.isInstanceOf[EmberProjectExec]), p)
        case scala.util.Failure(e) =>
          val ember = withEmber(enabled = true)(intercept[Exception](q().collect()))
          assert(ember.getClass == e.getClass && ember.getMessage == e.getMessage, s"$p: $ember\n$e")
      }
    }
    for (p <- Seq("yyyy-MM-dd HH:mm z", "XXX", "VV", "F")) {
      val df = checkSparkAnswerAndNative(table.select(col("id"), date_format(col("ts"), p)), Nil)
      assert(!nativeNodes(df).exists(_.isInstanceOf[EmberProjectExec]), p)
    }
    val nonLiteral =
      checkSparkAnswerAndNative(
        table.select(col("id"), expr("date_format(ts, cast(id % 3 as string))")),
        Nil
      )
    assert(!nativeNodes(nonLiteral).exists(_.isInstanceOf[EmberProjectExec]))
    withSQLConf("spark.sql.legacy.timeParserPolicy" -> "LEGACY") {
      val df = checkSparkAnswerAndNative(table.select(col("id"), date_format(col("ts"), "yyyy-MM-dd")), Nil)
      assert(!nativeNodes(df).exists(_.isInstanceOf[EmberProjectExec]))
    }
  }
}
