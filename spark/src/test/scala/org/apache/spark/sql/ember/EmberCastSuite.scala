package org.apache.spark.sql.ember

import scala.util.Try

import org.apache.spark.sql.ember.execution._

/** CAST natively over random data with extremes, ANSI on and off and TRY: same rows or same error class. */
class EmberCastSuite extends EmberQueryTest {

  private lazy val data = DataGen.table(spark, 1500, seed = 11).cache()

  private val numeric = Seq("i8", "i16", "i32", "i64", "dec", "dec38", "b")
  private val targets = Seq(
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "decimal(5,1)",
    "decimal(38,2)",
    "boolean",
    "string",
    "double"
  )

  private def check(expr: String): Unit = {
    val query = () => data.selectExpr("id", s"$expr AS r")
    val sparkFails = withEmber(enabled = false)(Try(query().collect()).isFailure)
    if (sparkFails) checkSparkErrorAndNative(query(), Seq(cls[EmberProjectExec]))
    else checkSparkAnswerAndNative(query(), Seq(cls[EmberProjectExec]))
  }

  test("numeric and boolean casts, ANSI on and off, and try_cast") {
    withSQLConf("spark.sql.session.timeZone" -> "UTC") {
      bothAnsiModes { _ =>
        for (c <- numeric; t <- targets) withClue(s"$c -> $t")(check(s"CAST($c AS $t)"))
        for (c <- Seq("i64", "dec38"); t <- Seq("int", "decimal(4,2)"))
          withClue(s"try $c -> $t")(check(s"try_cast($c AS $t)"))
        for (t <- Seq("int", "bigint", "float")) withClue(s"f64 -> $t")(check(s"CAST(f64 AS $t)"))
      }
    }
  }

  test("string parsing: numbers, booleans and dates, invalid input") {
    withSQLConf("spark.sql.session.timeZone" -> "UTC") {
      bothAnsiModes { _ =>
        for (t <- Seq("int", "bigint", "double", "decimal(12,3)", "boolean", "date")) {
          withClue(t)(check(s"CAST(CAST(i32 AS STRING) AS $t)"))
          withClue(s"raw $t")(check(s"CAST(s AS $t)"))
        }
      }
    }
  }

  test("dates and timestamps in UTC") {
    withSQLConf("spark.sql.session.timeZone" -> "UTC") {
      bothAnsiModes { _ =>
        for (
          e <- Seq(
            "CAST(dt AS STRING)",
            "CAST(dt AS TIMESTAMP)",
            "CAST(ts AS DATE)",
            "CAST(ts AS STRING)",
            "CAST(ntz AS TIMESTAMP)",
            "CAST(ts AS TIMESTAMP_NTZ)",
            "CAST(ts AS BIGINT)",
            "CAST(i32 AS TIMESTAMP)"
          )
        ) {
          withClue(e)(check(e))
        }
      }
    }
  }

  test("casts the engine does not support fall back with their reason") {
    withSQLConf("spark.sql.session.timeZone" -> "UTC", "spark.sql.ansi.enabled" -> "false") {
      // A string's bytes and back: native, the plan carrying strings as bytes (docs/compatibility.md).
      checkSparkAnswerAndNative(
        data.selectExpr("CAST(CAST(s AS BINARY) AS STRING) AS r"),
        Seq(cls[EmberProjectExec])
      )
      for (
        (e, reason) <- Seq(
          "CAST(dt AS BOOLEAN)" -> "date32 to boolean",
          // Java's Double.toString changed in JDK 19; on an older JVM the native text would differ.
          "CAST(f64 AS DECIMAL(10,2))" -> (if (Runtime.version().feature() < 19) "jdk" else "")
        )
      ) {
        checkSparkAnswerAndNative(data.selectExpr(s"$e AS r"), Seq.empty)
        withEmber(enabled = true) {
          val q = data.selectExpr(s"$e AS r")
          q.collect()
          val lines = EmberExplainInfo.fallbackLines(q.queryExecution.executedPlan)
          if (reason.nonEmpty) assert(lines.exists(_.toLowerCase.contains(reason)), lines.mkString("\n"))
        }
      }
    }
  }

  test("strings to timestamps in region zones: zones in the text, DST gaps and overlaps, invalid text") {
    val exprs = Seq(
      "CAST(CAST(ts AS STRING) AS TIMESTAMP)",
      "CAST(CAST(ntz AS STRING) AS TIMESTAMP)",
      "CAST(concat(CAST(ntz AS STRING), ' Europe/Berlin') AS TIMESTAMP)",
      "CAST(concat(replace(CAST(ntz AS STRING), ' ', 'T'), 'Z') AS TIMESTAMP)",
      "CAST(concat(CAST(ntz AS STRING), '+5:30') AS TIMESTAMP)",
      "CAST(concat(CAST(dt AS STRING), ' ', CAST(i16 % 30 AS STRING), ':', CAST(i8 % 70 AS STRING)) AS TIMESTAMP)",
      "CAST(s AS TIMESTAMP)",
      "try_cast(s AS TIMESTAMP)",
      "CAST(CAST(ntz AS STRING) AS TIMESTAMP_NTZ)",
      "CAST(concat(CAST(ntz AS STRING), ' PST') AS TIMESTAMP_NTZ)",
      "CAST(s AS TIMESTAMP_NTZ)"
    )
    for (zone <- Seq("America/Los_Angeles", "Europe/Berlin", "Asia/Kolkata", "Australia/Lord_Howe", "UTC")) {
      withSQLConf("spark.sql.session.timeZone" -> zone) {
        bothAnsiModes { _ =>
          for (e <- exprs) withClue(s"$zone: $e")(check(e))
        }
      }
    }
  }

  test("timestamp casts in a region session time zone run natively with Spark's answer") {
    withSQLConf("spark.sql.session.timeZone" -> "America/Los_Angeles") {
      checkSparkAnswerAndNative(
        data.selectExpr(
          "CAST(ts AS STRING) AS s",
          "CAST(ts AS DATE) AS d",
          "CAST(CAST(ts AS DATE) AS TIMESTAMP) AS t"
        ),
        Seq(cls[EmberProjectExec])
      )
    }
  }
}
