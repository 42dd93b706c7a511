package org.apache.spark.sql.ember

import scala.util.Try

import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.functions._

/**
 * Spark's arithmetic natively, over random data with extremes, ANSI on and off: where Spark answers, the rows
 * are identical; where Spark raises an error, Ember raises the same error class.
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
}
