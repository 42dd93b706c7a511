package org.apache.spark.sql.ember

import org.apache.spark.SparkException
import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.execution.{FilterExec, ProjectExec}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.expressions.Window
import org.apache.spark.sql.functions._
import org.ember.EmberConf

/**
 * Expressions the engine has no kernel for — Scala UDFs, `get_json_object`, `format_string` — evaluated by
 * Spark's own code inside native operators (proto `JvmExpr`): projections, filters, aggregates, join keys and
 * conditions, sort and shuffle keys, windows: Spark's rows with nulls, multi-byte
 * strings, decimals, dates and timestamps; no Spark projection or filter left; a failing UDF raises Spark's own
 * exception, and only for rows Spark evaluates it on (AND, CASE); explain names the expressions; off, the
 * operator falls back.
 */
class EmberJvmExpressionsSuite extends EmberQueryTest {

  override protected def sparkConf: org.apache.spark.SparkConf =
    super.sparkConf.set(EmberConf.JVM_EXPRESSIONS.key, "true")

  private lazy val data: DataFrame = DataGen.table(spark, 3000).cache()

  private val native = Seq(cls[EmberProjectExec], cls[EmberFilterExec])

  private val plusOne = udf((x: Int) => x + 1)
  private val shout = udf((s: String) => if (s == null) null else s.reverse.toUpperCase + "!")
  private val describe = udf((d: java.math.BigDecimal, t: java.sql.Timestamp) => s"$d@$t")
  private val boom = udf((x: Int) => if (x % 7 == 0) throw new IllegalArgumentException(s"boom $x") else x)

  private def noSparkProjectOrFilter(df: DataFrame): Unit = {
    val left = executedNodes(df).filter(n => n.isInstanceOf[ProjectExec] || n.isInstanceOf[FilterExec])
    assert(left.isEmpty, s"Spark operators left:\n${df.queryExecution.executedPlan}")
  }

  test("Scala UDFs and functions without a kernel in projections and filters run inside the native plan") {
    def query: DataFrame = data
      .where(plusOne(col("i32")) % 3 =!= 0 && length(shout(col("s"))) > 2)
      .select(
        col("id"),
        plusOne(col("i32")).as("p"),
        shout(col("s")).as("sh"),
        upper(shout(col("s"))).as("nested"),
        describe(col("dec"), col("ts")).as("d"),
        expr("get_json_object(concat('{\"a\":', cast(i64 as string), ',\"s\":\"', s, '\"}'), '$.a')").as("j"),
        expr("format_string('%s|%d|%.3f', s, i32, f64)").as("f"),
        (plusOne(col("i32")) % 1000 * 2 + col("i16")).as("mixed")
      )
    val df = checkSparkAnswerAndNative(query, native)
    noSparkProjectOrFilter(df)
    val explained = EmberExplainInfo.explain(df.queryExecution.executedPlan).mkString("\n")
    assert(explained.contains("evaluated by Spark inside the native plan"), explained)
    assert(explained.contains("get_json_object"), explained)
  }

  test("grouping keys and aggregate arguments without a kernel run inside the native aggregate") {
    checkSparkAnswerAndNative(
      data
        .groupBy(shout(col("s")).as("k"))
        .agg(max(plusOne(col("i32")) % 100).as("p"), max(expr("format_string('%05d', i16)")).as("f")),
      Seq(cls[EmberAggregateExec])
    )
  }

  test("a failing UDF raises Spark's exception, and only where Spark evaluates it (AND, CASE)") {
    def failing: DataFrame = data.select(boom(col("i32")).as("b"))
    val sparkError = withEmber(enabled = false)(intercept[SparkException](failing.collect()))
    val emberError = withEmber(enabled = true)(intercept[SparkException](failing.collect()))
    assert(emberError.getCondition == sparkError.getCondition, emberError)
    assert(emberError.getCondition == "FAILED_EXECUTE_UDF", emberError)
    assert(Option(emberError.getCause).map(_.getMessage).exists(_.startsWith("boom")), emberError)
    // Rows where the UDF would fail never reach it.
    val guarded = checkSparkAnswerAndNative(
      data
        .where(col("i32") % 7 =!= 0 && boom(col("i32")) > 0)
        .select(col("id"), when(col("i32") % 7 === 0, lit(-1)).otherwise(boom(col("i32"))).as("b")),
      native
    )
    noSparkProjectOrFilter(guarded)
    checkSparkAnswerAndNative(
      data.select(col("id"), when(col("i32") % 7 === 0, lit(-1)).otherwise(boom(col("i32"))).as("b")),
      native
    )
  }

  test(
    "what the engine refuses (Math's intrinsics, lazily evaluated arguments) runs inside it through Spark"
  ) {
    val df = checkSparkAnswerAndNative(
      data.select(
        col("id"),
        sin(col("f64")).as("sin"),
        cos(col("i32")).as("cos"),
        tan(col("f32")).as("tan"),
        // Spark evaluates only the chosen argument: 1 / 0 never raises for rows choosing the other.
        expr("elt(if(i32 % 2 = 0, 1, 2), cast(i16 as string), cast(1 div (i32 % 2) as string))").as("elt")
      ),
      native
    )
    noSparkProjectOrFilter(df)
  }

  test(
    "join keys and conditions, sort keys, shuffle keys and windows without a kernel run inside the operator"
  ) {
    // Explain names every native node (exchanges included) with expressions Spark evaluates inside it.
    def assertJvm(df: DataFrame, node: String): Unit = {
      val lines = EmberExplainInfo.jvmLines(df.queryExecution.executedPlan)
      assert(lines.exists(_.startsWith(s"$node:")), s"no JVM expression in $node: $lines")
    }
    val other = DataGen.table(spark, 800, seed = 7).cache()
    def joined(l: DataFrame, r: DataFrame): DataFrame =
      l.as("l")
        .join(
          r.as("r"),
          plusOne(col("l.i16").cast("int")) === col("r.i16").cast("int") + 1 &&
            shout(col("l.s")) =!= shout(concat(col("r.s"), lit("x")))
        )
        .select(col("l.id"), col("r.id"), col("l.s"), col("r.i64"))
    withSQLConf("spark.sql.autoBroadcastJoinThreshold" -> "-1") {
      // Spark plans a sort-merge join: its exchanges hash the UDF's value, the native hash join compares it.
      val shuffled = checkSparkAnswerAndNative(
        joined(data, other),
        Seq(cls[EmberSpillingHashJoinExec])
      )
      assertJvm(shuffled, "EmberSpillingHashJoin")
      assertJvm(shuffled, "EmberShuffleExchange")
      assert(!executedNodes(shuffled).exists(_.isInstanceOf[ShuffleExchangeExec]))
      noSparkProjectOrFilter(shuffled)
    }
    val broadcasted =
      checkSparkAnswerAndNative(joined(data, broadcast(other)), Seq(cls[EmberBroadcastHashJoinExec]))
    assertJvm(broadcasted, "EmberBroadcastHashJoin")
    // A global sort: the range bounds are sampled over the UDF's values, the native sort orders by them.
    val sorted = checkSparkAnswerAndNative(
      data.orderBy(shout(col("s")).desc_nulls_last, col("id")).select(col("id"), col("s")),
      Seq(cls[EmberSortExec]),
      ordered = true
    )
    assertJvm(sorted, "EmberSort")
    // A top-k stays native under a projection without a kernel (Spark projects its few rows); its keys,
    // evaluated for every input row, are not evaluated through the JVM (measured slower than Spark's own top-k):
    // with one, the top-k stays in Spark.
    checkSparkAnswerAndNative(
      data.orderBy(col("i32"), col("id")).select(col("id"), shout(col("s"))).limit(25),
      Seq(cls[EmberTakeOrderedAndProjectExec]),
      ordered = true
    )
    val jvmKey = checkSparkAnswerAndNative(
      // (A string UDF as the key would fail vanilla Spark: its driver-side merge decodes on the scheduler thread.)
      data.orderBy(plusOne(col("i32")) % 50, col("id")).select(col("id"), col("s")).limit(25),
      Nil,
      ordered = true
    )
    assert(
      executedNodes(jvmKey).exists(_.isInstanceOf[org.apache.spark.sql.execution.TakeOrderedAndProjectExec]),
      jvmKey.queryExecution.executedPlan
    )
    val repartitioned = checkSparkAnswerAndNative(
      data.repartition(7, shout(col("s"))).select(col("id"), col("s"), spark_partition_id().as("p")),
      Nil
    )
    assertJvm(repartitioned, "EmberShuffleExchange")
    checkSparkAnswerAndNative(
      data.select(
        col("id"),
        sum(col("i32"))
          .over(Window.partitionBy(shout(col("s"))).orderBy(plusOne(col("i32")), col("id")))
          .as("w")
      ),
      Seq(cls[EmberPrefixWindowExec])
    )
  }

  test("an expression reads the conf of its own query (a datetime parser policy), not the last one's") {
    // The same expression bytes on the same task threads, under policies that give different answers.
    def query: DataFrame = spark
      .createDataFrame(Seq(Tuple1("2020-01-27T20:06:11.847-0800"), Tuple1("2020-01-27T20:06:11.847")))
      .toDF("ts")
      .select(to_timestamp(col("ts"), "yyyy-MM-dd'T'HH:mm:ss.SSSz").as("t"))
    for (policy <- Seq("legacy", "corrected", "legacy", "corrected"))
      withSQLConf("spark.sql.legacy.timeParserPolicy" -> policy, "spark.sql.ansi.enabled" -> "false") {
        withClue(policy)(checkSparkAnswerAndNative(query, Seq(cls[EmberProjectExec])))
      }
  }

  test("empty input, all-null columns, a JVM expression over a native one") {
    checkSparkAnswerAndNative(data.where(col("id") < 0).select(shout(col("s"))), native)
    checkSparkAnswerAndNative(
      data.select(shout(lit(null).cast("string")).as("n"), shout(concat(col("s"), lit("ü"))).as("c")),
      native
    )
  }

  test("switched off: the operator falls back, with the reason") {
    withSQLConf(EmberConf.JVM_EXPRESSIONS.key -> "false") {
      val df = data.select(shout(col("s")))
      df.collect()
      val reasons = EmberExplainInfo.fallbackLines(df.queryExecution.executedPlan)
      assert(reasons.exists(_.contains("Project")), reasons)
    }
  }
}
