package org.apache.spark.sql.ember

import org.apache.spark.sql.Encoders
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.execution.{ColumnarToRowExec, SparkPlan}
import org.apache.spark.sql.functions._
import org.apache.spark.unsafe.Platform

/**
 * Rows out: native `UnsafeRow` writing ([[EmberColumnarToRowExec]]) against Spark's own `ColumnarToRowExec` over
 * the same native block — byte-identical rows for every type, with nulls, extremes, wide decimals and long
 * strings. Rows in: [[UnsafeRowSource]] (decoded natively; the decoding is tested against the writer in Rust).
 */
class EmberRowConversionSuite extends EmberQueryTest {

  private lazy val data: DataFrame = DataGen.table(spark, 3000).cache()

  /** The rows' bytes, copied (the iterators re-point one row object). */
  private def bytes(plan: SparkPlan): Seq[Seq[Byte]] =
    plan
      .execute()
      .mapPartitionsInternal(_.map((r: InternalRow) => r.asInstanceOf[UnsafeRow].getBytes.toSeq))
      .collect()
      .toSeq

  private def nativeTransitions(df: DataFrame): Seq[EmberColumnarToRowExec] =
    executedNodes(df).collect { case c: EmberColumnarToRowExec => c }

  private def checkSameBytes(df: DataFrame): Unit = {
    df.collect() // runs adaptive execution to its final plan
    val transitions = nativeTransitions(df)
    assert(transitions.nonEmpty, s"no native row transition in\n${df.queryExecution.executedPlan}")
    for (t <- transitions) {
      val native = bytes(t)
      val spark = bytes(ColumnarToRowExec(t.child))
      assert(native.size == spark.size)
      assert(native.nonEmpty)
      native.zip(spark).zipWithIndex.foreach { case ((n, s), i) =>
        assert(n == s, s"row $i differs: native ${n.mkString(",")} vs Spark ${s.mkString(",")}")
      }
    }
  }

  test("every type, nulls and extremes: the same bytes as Spark's ColumnarToRowExec") {
    checkSameBytes(data.where(col("id") % 3 =!= 1))
  }

  test("wide and narrow decimals, strings of every length, all-null columns") {
    checkSameBytes(
      data
        .where(col("id") % 2 === 0)
        .select(
          col("id"),
          col("dec38"),
          col("dec"),
          lit(null).cast("decimal(30,2)").as("dec_null"),
          lit(BigDecimal("-1")).cast("decimal(38,0)").as("dec_neg"),
          lit(null).cast("string").as("s_null"),
          col("s"),
          lit("a string of more than one word").as("s_long"),
          col("bin"),
          lit(null).as("n")
        )
    )
  }

  // ANSI off: `i64 + i` overflows on the extremes (ANSI errors are not what this suite is about).
  test("more than 64 columns (two null-bit words)") {
    val cols =
      (0 until 70).map(i => when(col("id") % (i + 2) === 0, lit(null)).otherwise(col("i64") + i).as(s"c$i"))
    withSQLConf("spark.sql.ansi.enabled" -> "false")(checkSameBytes(data.select(col("id") +: cols: _*)))
  }

  test("native rows feed Spark's row operators: same answers as Ember off, and the switch falls back") {
    val q = () =>
      data.where(col("i32") > 0).groupBy(col("b")).agg(min(col("i64")), max(col("s")), count(col("dec38")))
    checkSparkAnswerAndNative(q(), Seq(cls[EmberFilterExec]))
    val on = q()
    on.collect()
    assert(nativeTransitions(on).nonEmpty)
    withSQLConf("spark.ember.exec.nativeColumnarToRow.enabled" -> "false") {
      val df = q()
      df.collect()
      assert(nativeTransitions(df).isEmpty)
      assert(executedNodes(df).exists(_.isInstanceOf[ColumnarToRowExec]))
    }
  }

  test("rows in: UnsafeRowSource packs UnsafeRows and projects other rows to the same bytes") {
    val schema = DataGen.schema
    val generic = DataGen.table(spark, 200).collect().toSeq.map { r =>
      org.apache.spark.sql.catalyst.CatalystTypeConverters
        .createToCatalystConverter(schema)(r)
        .asInstanceOf[InternalRow]
    }
    val project = UnsafeProjection.create(schema)
    val expected = generic.map(r => project(r).getBytes.toSeq)
    for (rows <- Seq(generic, generic.map(r => project(r).copy()))) {
      val source = new UnsafeRowSource(rows.iterator, schema, 64)
      val packed = Iterator
        .continually(source.nextRows())
        .takeWhile(_ >= 0)
        .map(n => source.packed.take(n)) // copied before the next call reuses the buffer
        .toSeq
      assert(packed.size == 4) // 64 + 64 + 64 + 8 rows
      val unpacked = packed.flatMap { buf =>
        val out = scala.collection.mutable.ArrayBuffer.empty[Seq[Byte]]
        var pos = 0
        while (pos < buf.length) {
          val size = Platform.getLong(buf, Platform.BYTE_ARRAY_OFFSET + pos).toInt
          out += buf.slice(pos + 8, pos + 8 + size).toSeq
          pos += 8 + size
        }
        out
      }
      assert(unpacked == expected)
    }
  }

  test("rows in: a failing Spark child fails the task with its own exception") {
    // A typed map stays in Spark (row-based), under a native filter that pulls its rows.
    val failing = spark
      .range(0, 10000, 1, 2)
      .map { (x: java.lang.Long) =>
        if (x == 5000L) throw new IllegalStateException("boom from Spark")
        x.longValue()
      }(Encoders.scalaLong)
      .toDF("id")
    val e = intercept[Exception](failing.where(col("id") % 2 === 0).select((col("id") + 1).as("x")).collect())
    assert(e.getMessage.contains("boom from Spark"), e.getMessage)
    val plan = failing.where(col("id") % 2 === 0).queryExecution.executedPlan
    assert(collectWithSubqueries(plan) { case f: EmberFilterExec => f }.nonEmpty, plan)
    assertNoNativeMemoryHeld()
  }
}
