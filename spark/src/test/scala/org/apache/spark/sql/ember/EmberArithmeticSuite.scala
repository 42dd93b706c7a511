package org.apache.spark.sql.ember

import scala.util.Try

import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.functions._

/**
 * Spark's arithmetic natively, over random data with extremes, ANSI on and off: where Spark answers, the rows
 * are identical; where Spark raises an error, Ember raises the same error class. Also Spark's hash functions
 * (`hash`, `xxhash64`), whose bit-exactness is arithmetic too.
 */
class EmberArithmeticSuite extends EmberQueryTest {

  private lazy val data = DataGen.table(spark, 2000, seed = 7).cache()

  private val expressions = Seq(
    "i64 + i64",
    "i64 - id",
    "i64 * i64",
    "i32 + i32",
    "i32 * i16",
    "i16 - i16",
    "i8 + i8",
    "i8 * i8",
    "f64 + f64",
    "f64 * f32",
    "f32 - f32",
    "f64 / f64",
    "dec / dec",
    "dec * dec",
    "dec + dec38",
    "dec38 - dec38",
    "dec38 * dec",
    "i64 % i64",
    "i32 % i8",
    "f64 % f64",
    "dec % dec",
    "i64 div i64",
    "i32 div i16",
    "dec div dec",
    "-i64",
    "-i8",
    "-f64",
    "-dec38",
    "try_add(i64, i64)",
    "try_multiply(i32, i32)",
    "try_divide(dec, dec)",
    "try_subtract(i8, i8)",
    "i64 / i32",
    "abs_placeholder"
  )
    .filterNot(_ == "abs_placeholder")

  private def check(expr: String): Unit = {
    val query = () => data.selectExpr("id", s"$expr AS r")
    val sparkFails = withEmber(enabled = false)(Try(query().collect()).isFailure)
    if (sparkFails) checkSparkErrorAndNative(query(), Seq(cls[EmberProjectExec]))
    else checkSparkAnswerAndNative(query(), Seq(cls[EmberProjectExec]))
  }

  test("arithmetic over every numeric type, ANSI on and off") {
    bothAnsiModes { _ =>
      expressions.foreach(e => withClue(e)(check(e)))
    }
  }

  test("ANSI errors are raised where Spark raises them, not where Spark does not evaluate") {
    withSQLConf("spark.sql.ansi.enabled" -> "true") {
      // Overflow in every row that reaches the addition.
      checkSparkErrorAndNative(
        data.selectExpr("i64 + 9223372036854775807L AS r").where("r IS NOT NULL OR true"),
        Seq(cls[EmberProjectExec])
      )
      // Division by zero guarded by CASE and by AND: Spark never divides by the zero, neither does Ember.
      checkSparkAnswerAndNative(
        data.selectExpr("id", "CASE WHEN i32 <> 0 THEN 100 DIV i32 ELSE 0 END AS r"),
        Seq(cls[EmberProjectExec])
      )
      checkSparkAnswerAndNative(data.where("i64 <> 0 AND 1000L div i64 > 1"), Seq(cls[EmberFilterExec]))
      checkSparkErrorAndNative(data.selectExpr("1 / (i32 - i32)"), Seq(cls[EmberProjectExec]))
    }
  }

  test("arithmetic in filters and sort keys") {
    bothAnsiModes { ansi =>
      checkSparkAnswerAndNative(data.where("i16 + 1 > 0 AND dec * 2 < 1000"), Seq(cls[EmberFilterExec]))
      checkSparkAnswerAndNative(
        data.where(col("f64") * 2 > col("f64")).sort(col("id")),
        Seq(cls[EmberFilterExec])
      )
      if (!ansi) {
        checkSparkAnswerAndNative(
          data.sort(expr("i64 * 3"), col("id")),
          Seq(cls[EmberSortExec]),
          ordered = true
        )
      }
    }
  }

  private val hashColumns =
    Seq("b", "i8", "i16", "i32", "i64", "f32", "f64", "dec", "dec38", "s", "bin", "dt", "ts", "ntz")

  test("hash() and xxhash64() over every supported type run natively, bit-identical to Spark") {
    withSQLConf("spark.sql.session.timeZone" -> "UTC") {
      val all = hashColumns.mkString(", ")
      val reversed = hashColumns.reverse.mkString(", ")
      val exprs = hashColumns.flatMap(c => Seq(s"hash($c) AS h_$c", s"xxhash64($c) AS x_$c")) ++ Seq(
        s"hash($all) AS h_all",
        s"xxhash64($all) AS x_all",
        s"hash($reversed) AS h_rev",
        s"xxhash64($reversed) AS x_rev",
        // Literals and NULLs among the columns: a NULL leaves the hash as it was.
        "hash(i32, 'lit', CAST(NULL AS BIGINT), s) AS h_lit",
        "xxhash64(i32, 'lit', NULL, s, -0.0D) AS x_lit",
        "hash(NULL) AS h_null",
        "xxhash64(s, s, s) AS x_sss"
      )
      checkSparkAnswerAndNative(data.selectExpr("id" +: exprs: _*), Seq(cls[EmberProjectExec]))
      checkSparkAnswerAndNative(
        data.where(s"xxhash64(s, i64, f64) % 3 = 0 OR hash(dec38, bin) % 5 = 1"),
        Seq(cls[EmberFilterExec])
      )
    }
  }

  test("hash() and xxhash64() of nested types or other collations fall back with their reason") {
    for (
      (e, reason) <- Seq(
        "xxhash64(i32, array(i32, i64))" -> "xxhash64 of array<bigint> is not supported",
        "hash(named_struct('a', i32, 'b', s))" -> "hash of struct<a:int,b:string> is not supported",
        "xxhash64(collate(s, 'UTF8_LCASE'))" -> "xxhash64 of string collate UTF8_LCASE is not supported"
      )
    ) {
      withClue(e) {
        checkSparkAnswerAndNative(data.selectExpr("id", s"$e AS r"), Seq.empty)
        withEmber(enabled = true) {
          val q = data.selectExpr("id", s"$e AS r")
          q.collect()
          assert(nativeNodes(q).collect { case p: EmberProjectExec => p }.isEmpty)
          val lines = EmberExplainInfo.fallbackLines(q.queryExecution.executedPlan)
          assert(lines.exists(_.contains(reason)), lines.mkString("\n"))
        }
      }
    }
  }
}
