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

  /** `cols` over the data, Ember off vs on, every projection native (the data's own ones too). */
  private def native(cols: Column*): DataFrame = {
    val df = checkSparkAnswerAndNative(data.select(col("i") +: cols: _*), Seq(cls[EmberProjectExec]))
    val spark = executedNodes(df).collect { case p: org.apache.spark.sql.execution.ProjectExec => p }
    assert(spark.isEmpty, executedNodes(df).flatMap(EmberExecRule.fallbackReasons).mkString("; "))
    df
  }

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

  test("arrays made from arrays: sort, remove, slice, set functions, regexp_extract_all") {
    bothAnsiModes { _ =>
      val parts = split(col("s"), "[,; ]")
      val ints =
        array(col("i") % 4, lit(2), when(col("i") % 5 === 0, lit(null)).otherwise(col("i") % 3), lit(1))
      native(
        array_join(sort_array(parts), "|").as("s1"),
        array_join(sort_array(parts, asc = false), "|").as("s2"),
        array_position(sort_array(array(col("d"), lit(-0.0), lit(Double.NaN), lit(0.0))), lit(0.0)).as("s4"),
        element_at(sort_array(ints, asc = false), 4).as("s5"),
        array_join(array_remove(parts, "a"), "|").as("r1"),
        size(array_remove(ints, 2)).as("r2"),
        array_join(slice(parts, 2, 2), "|").as("l1"),
        array_join(slice(parts, -2, 5), "|").as("l2"),
        size(slice(ints, 5, 1)).as("l3"),
        array_join(array_distinct(parts), "|").as("d1"),
        array_join(array_union(parts, split(col("s"), "b")), "|").as("u1"),
        size(array_union(ints, array(lit(null).cast("int"), lit(7)))).as("u2"),
        array_join(array_intersect(parts, array(lit("a"), lit("b"), lit(""))), "|").as("i1"),
        array_position(array_intersect(ints, array(lit(1), lit(null).cast("int"), lit(2))), 2).as("i2"),
        array_join(array_except(parts, array(lit("a"))), "|").as("e1"),
        size(array_except(ints, array(lit(2)))).as("e2"),
        arrays_overlap(parts, array(lit("b"), lit("x"))).as("o1"),
        arrays_overlap(ints, array(lit(9), lit(null).cast("int"))).as("o2"),
        arrays_overlap(ints, array(lit(3))).as("o3"),
        array_join(regexp_extract_all(col("s"), lit("([a-z])(\\d)?"), lit(1)), "|").as("x1"),
        array_join(regexp_extract_all(col("s"), lit("[a-z]+(\\d)?"), lit(1)), "|").as("x2"),
        size(regexp_extract_all(col("s"), lit("é|😀"), lit(0))).as("x3")
      )
      for (start <- Seq(0)) {
        checkSparkErrorAndNative(
          data.select(col("i"), size(slice(split(col("s"), ","), start, 1))),
          Seq(cls[EmberProjectExec]),
          exactParameters = true
        )
      }
      checkSparkErrorAndNative(
        data.select(col("i"), size(slice(split(col("s"), ","), 1, -1))),
        Seq(cls[EmberProjectExec]),
        exactParameters = true
      )
    }
  }

  test(
    "an array leaving its expression, compared or split by an empty-matching pattern stays in Spark"
  ) {
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
