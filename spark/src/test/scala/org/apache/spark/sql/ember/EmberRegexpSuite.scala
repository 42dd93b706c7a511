package org.apache.spark.sql.ember

import org.apache.spark.sql.Column
import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.functions._
import org.ember.EmberExplainInfo

/**
 * `rlike` / `regexp_like`, `regexp_extract`, `regexp_instr`, `regexp_replace` over Java patterns translated for
 * the engine, Ember off vs on: Java's `.`, `$`, ASCII `\d \s \w`, lookaround, backreferences, named groups over
 * line terminators, multi-byte and astral text; patterns the translation refuses stay in Spark with the reason.
 */
class EmberRegexpSuite extends EmberQueryTest {

  private val texts = Seq(
    "abc",
    "abc\n",
    "abc\r\n",
    "abc\n\n",
    "ab\rc",
    "a.c",
    "a\nc",
    "aéc",
    "😀x😀ab",
    "",
    "100-200",
    "x٣y 7",
    "é_1",
    "Hello World",
    "foo123bar45",
    "c\u2028",
    "\r",
    "ab ab\tab",
    "aaa",
    "$x",
    "word words",
    null
  )

  private def data: DataFrame = {
    import testImplicits._
    val fixed = texts.toDF("s")
    fixed.union(DataGen.table(spark, 500, seed = 5).select(col("s"))).asInstanceOf[DataFrame]
  }

  private val nativePatterns = Seq(
    "a.c",
    "abc$",
    "c$",
    "\\r$",
    "^ab",
    "\\d+",
    "\\D",
    "\\s",
    "\\S+",
    "\\w+",
    "\\W",
    "[\\w-]+",
    "[^a-c]",
    "(\\d+)-(\\d+)",
    "x{2,3}?",
    "a{2}",
    "(a)(?<n>b)\\1",
    "\\Qa.b\\E",
    "a(?=b)",
    "(?<=a)b",
    "(?<!a)b",
    "a(?!b)",
    "😀",
    "[😀é]",
    "\\x41|\\u00e9",
    "(?:ab)+",
    "\\t",
    "[.]",
    "\\.",
    "\\$",
    "(\\w)(\\d)?",
    "o+?",
    "(?>a|ab)c",
    "\\Aab",
    "b\\z",
    "c\\Z",
    "[a-cx-z0-9]+",
    ".*",
    "a*"
  )

  /** Ember off vs on, every projection native (the data's own ones too). */
  private def native(query: => DataFrame): DataFrame = {
    val df = checkSparkAnswerAndNative(query, Seq(cls[EmberProjectExec]))
    assert(
      !executedNodes(df).exists(_.isInstanceOf[org.apache.spark.sql.execution.ProjectExec]),
      executedNodes(df).flatMap(EmberExecRule.fallbackReasons).mkString("; ")
    )
    df
  }

  test("rlike / regexp_like / regexp / regexp_instr natively, every pattern") {
    val cols: Seq[Column] = col("s") +: nativePatterns.zipWithIndex.flatMap { case (p, i) =>
      Seq(
        col("s").rlike(p).as(s"rlike$i"),
        regexp_like(col("s"), lit(p)).as(s"like$i"),
        regexp_instr(col("s"), lit(p)).as(s"instr$i")
      )
    }
    bothAnsiModes(_ => native(data.select(cols: _*)))
    native(data.selectExpr("s", "s regexp 'a.c' AS r"))
  }

  test("regexp_extract of the whole match and of groups, taking part or not") {
    val cols: Seq[Column] = col("s") +: nativePatterns.zipWithIndex.map { case (p, i) =>
      regexp_extract(col("s"), p, 0).as(s"g0_$i")
    }
    native(data.select(cols: _*))
    native(
      data.select(
        col("s"),
        regexp_extract(col("s"), "(\\d+)-(\\d+)", 2),
        regexp_extract(col("s"), "(\\w)(\\d)?", 2),
        regexp_extract(col("s"), "(?<w>[a-z]+)(\\d*)", 1),
        regexp_extract(col("s"), "(a)(?<n>b)\\1", 2),
        regexp_extract(col("s"), "(?<=a)(b|c)", 1)
      )
    )
  }

  test("regexp_replace with groups, names and escapes in the replacement") {
    native(
      data.select(
        col("s"),
        regexp_replace(col("s"), "\\d+", "#"),
        regexp_replace(col("s"), "(\\d+)-(\\d+)", "$2-$1"),
        regexp_replace(col("s"), "\\s+$", ""),
        regexp_replace(col("s"), "(?<n>b)", "[${n}]"),
        regexp_replace(col("s"), "a", "\\$"),
        regexp_replace(col("s"), "é|😀", "_"),
        regexp_replace(col("s"), "(a)(b)?", "<$2$1>")
      )
    )
    native(data.select(col("s"), regexp_replace(col("s"), lit("(\\w)(\\w)"), lit("$2$1"))))
    // A NULL pattern or replacement: NULL.
    native(data.select(col("s"), regexp_replace(col("s"), lit(null).cast("string"), lit("x"))))
    native(data.select(col("s"), col("s").rlike(null.asInstanceOf[String])))
  }

  private def fallsBack(df: => DataFrame, reason: String, error: Boolean = false): Unit = {
    if (error) checkSparkErrorAndNative(df, Nil) else checkSparkAnswerAndNative(df, Nil)
    withEmber(enabled = true) {
      val lines = EmberExplainInfo.fallbackLines(df.queryExecution.executedPlan)
      assert(lines.exists(_.contains(reason)), s"expected '$reason' among: ${lines.mkString("; ")}")
    }
  }

  test("constructs whose Java meaning is not reproduced stay in Spark, with the reason") {
    fallsBack(data.select(col("s").rlike("(?i)abc")), "inline flags")
    fallsBack(data.select(col("s").rlike("\\bword")), "the escape \\b")
    fallsBack(data.select(col("s").rlike("\\p{Alpha}")), "the escape \\p")
    fallsBack(data.select(col("s").rlike("a*+")), "possessive")
    fallsBack(data.select(col("s").rlike("[a&&b]")), "intersection")
    fallsBack(data.select(regexp_extract(col("s"), "(a)*b", 1)), "repeated group")
    fallsBack(data.select(regexp_replace(col("s"), "a*", "x")), "empty string")
    fallsBack(data.selectExpr("regexp_replace(s, 'a', 'x', 2)"), "position other than 1")
    fallsBack(data.select(regexp_replace(col("s"), "a", "$2")), "no group 2", error = true)
    fallsBack(data.selectExpr("s rlike s"), "non-literal")
  }

  test("a pattern Java rejects: Spark's error, raised by Spark") {
    // Spark raises Java's own PatternSyntaxException here (no error class): the same, with Ember on.
    def root(t: Throwable): Throwable = if (t.getCause == null) t else root(t.getCause)
    val query = () => data.select(col("s").rlike("[")).asInstanceOf[DataFrame]
    val sparkError = root(withEmber(enabled = false)(intercept[Throwable](query().collect())))
    val emberError = root(withEmber(enabled = true)(intercept[Throwable](query().collect())))
    assert(sparkError.isInstanceOf[java.util.regex.PatternSyntaxException], sparkError)
    assert(emberError.getClass == sparkError.getClass && emberError.getMessage == sparkError.getMessage)
    withEmber(enabled = true) {
      val lines = EmberExplainInfo.fallbackLines(query().queryExecution.executedPlan)
      assert(lines.exists(_.contains("unclosed character class")), lines)
    }
    fallsBack(
      data.select(regexp_extract(col("s"), "(a)", 2)),
      "group 2 of a pattern with 1 groups",
      error = true
    )
  }
}
