package org.apache.spark.sql.ember

import org.apache.spark.sql.Column
import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.functions._

/**
 * Arrays inside an expression, Ember off vs on in both ANSI modes: `split` (Java patterns, limits, the empty
 * pattern, multi-byte text), `size` / `cardinality`, `element_at` / `try_element_at` / `arr[i]`,
 * `array_contains`, `array_position`, `array_max` / `array_min` (NaN, -0.0), `array_join`, `array(…)` and array
 * literals; Spark's errors for indexes out of bounds; an array that would leave the expression stays in Spark.
 */
class EmberArrayFunctionsSuite extends EmberQueryTest {

  private def data: DataFrame = {
    import testImplicits._
    val fixed = Seq(
      ("a,b,c", 1, 1.5),
      ("a,,b,", 2, Double.NaN),
      (",x", 3, -0.0),
      ("", 4, 0.0),
      ("é,😀x,ü", 5, 2.0),
      ("one", 6, -1.0),
      ("a b\tc  d", 7, 3.0),
      ("x;y,z", 8, Double.NegativeInfinity),
      (null, 9, 4.0)
    ).toDF("s", "i", "d")
    fixed
      .union(
        DataGen
          .table(spark, 300, seed = 11)
          .selectExpr("s", "cast(id as int) as i", "cast(id / 7 as double) as d")
      )
      .asInstanceOf[DataFrame]
  }

  private def native(cols: Column*): DataFrame =
    checkSparkAnswerAndNative(data.select(col("i") +: cols: _*), Seq(cls[EmberProjectExec]))

  test("split by Java patterns and limits, read by size, indexes and searches") {
    // ANSI off: indexes out of bounds are NULL here (their ANSI errors are tested below).
    withSQLConf("spark.sql.ansi.enabled" -> "false") {
      val parts = split(col("s"), ",")
      native(
        size(parts).as("n"),
        cardinality(split(col("s"), "[,;]")).as("n2"),
        size(split(col("s"), "\\s+")).as("n3"),
        size(split(col("s"), "")).as("n4"),
        element_at(split(col("s"), "", 2), 2).as("e0"),
        element_at(parts, 1).as("e1"),
        element_at(split(col("s"), ",", 2), -1).as("e2"),
        element_at(split(col("s"), ",", 0), -1).as("e3"),
        try_element_at(parts, lit(7)).as("e4"),
        expr("try_element_at(split(s, 'b|c'), -3)").as("e5"),
        array_contains(parts, "b").as("c1"),
        array_position(parts, "").as("p1"),
        array_max(parts).as("m1"),
        array_min(split(col("s"), "[^a-z]")).as("m2"),
        array_join(parts, "|").as("j1")
      )
    }
  }

  test("array(…), literals and NULL elements: contains, position, extremes, join") {
    bothAnsiModes { _ =>
      val nullableInt = when(col("i") % 3 === 0, lit(null)).otherwise(col("i"))
      native(
        array_contains(array(nullableInt, lit(5), lit(7)), col("i")).as("c1"),
        array_contains(array(col("d"), lit(Double.NaN), lit(0.0)), col("d")).as("c2"),
        array_position(array(nullableInt, col("i"), lit(5)), lit(5)).as("p1"),
        array_max(array(col("d"), lit(1.0), lit(-0.0))).as("x1"),
        array_min(array(col("d"), lit(1.0), lit(null).cast("double"))).as("x2"),
        array_join(array(col("s"), lit(null).cast("string"), lit("z")), ",").as("j1"),
        array_join(array(col("s"), lit(null).cast("string"), lit("z")), ",", "NULL").as("j2"),
        expr("array_contains(array('a', 'b', null), s)").as("c3"),
        expr("array_position(array(1.5D, 2.0D, -0.0D), d)").as("p2"),
        expr("element_at(array(1, 2, 3), i % 3 + 1)").as("e1")
      )
      checkSparkAnswerAndNative(
        data.where(array_contains(split(col("s"), ","), "a")).select(col("i"), col("s")),
        Seq(cls[EmberFilterExec])
      )
    }
  }

  test("size of a NULL array, indexes out of bounds and index 0: Spark's NULLs and errors") {
    bothAnsiModes { ansi =>
      native(size(split(col("s"), ",")).as("n"), expr("split(s, ',')[0]").as("b"))
      if (!ansi) native(expr("split(s, ',')[1]").as("a"), expr("element_at(split(s, ','), -2)").as("c"))
      val outOfBounds = Seq(
        () => data.select(col("i"), expr("split(s, ',')[3]")),
        () => data.select(col("i"), element_at(split(col("s"), ","), 4))
      )
      for (q <- outOfBounds) {
        if (ansi) checkSparkErrorAndNative(q(), Seq(cls[EmberProjectExec]), exactParameters = true)
        else checkSparkAnswerAndNative(q(), Seq(cls[EmberProjectExec]))
      }
      checkSparkErrorAndNative(
        data.select(col("i"), element_at(split(col("s"), ","), 0)),
        Seq(cls[EmberProjectExec])
      )
    }
  }

  test("an array leaving its expression, compared or split by an empty-matching pattern stays in Spark") {
    val small =
      () => spark.range(0, 20, 1, 2).selectExpr("cast(id as string) || ',x' as s", "cast(id as int) as i")
    val stays = Seq(
      () => small().select(col("i"), split(col("s"), ",")),
      () => small().where(split(col("s"), ",") === array(lit("1"), lit("x"))).select(col("i")),
      () => small().select(col("i"), size(split(col("s"), "x*"))),
      () => small().select(col("i"), when(col("i") > 3, split(col("s"), ",")).getItem(0))
    )
    for (q <- stays) {
      val df = checkSparkAnswerAndNative(q(), Nil)
      val reasons = executedNodes(df).flatMap(EmberExecRule.fallbackReasons)
      assert(reasons.exists(r => r.contains("array") || r.contains("split")), reasons)
    }
  }
}
