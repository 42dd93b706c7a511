package org.apache.spark.sql.ember

import org.apache.spark.SparkException
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
      val source = new UnsafeRowSource(rows.iterator, schema, 64, Long.MaxValue)
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

  test("rows in: UnsafeRowSource cuts its buffers at spark.ember.rowBatch.maxBytes, plus at most one row") {
    val schema = new org.apache.spark.sql.types.StructType().add("s", "string")
    val project = UnsafeProjection.create(schema)
    def row(bytes: Int): UnsafeRow =
      project(InternalRow(org.apache.spark.unsafe.types.UTF8String.fromString("x" * bytes))).copy()
    val cap = 64 << 10
    // 40 rows of ~10 KB, one of 1 MB, 40 more of ~10 KB.
    val sizes = Seq.fill(40)(10000) ++ Seq(1 << 20) ++ Seq.fill(40)(10000)
    val rows = sizes.map(row)
    val source = new UnsafeRowSource(rows.iterator, schema, 8192, cap)
    val calls = scala.collection.mutable.ArrayBuffer.empty[(Int, Int, Int)] // (bytes, rows, buffer length)
    var n = source.nextRows()
    while (n >= 0) {
      var pos = 0
      var count = 0
      var largest = 0
      while (pos < n) {
        val size = Platform.getLong(source.packed, Platform.BYTE_ARRAY_OFFSET + pos).toInt
        largest = math.max(largest, size)
        pos += 8 + size
        count += 1
      }
      assert(pos == n)
      // Under the cap before its last row: the cap plus at most one row.
      assert(n - (8 + largest) < cap, s"a call packed $n bytes in $count rows")
      calls += ((n, count, source.packed.length))
      n = source.nextRows()
    }
    assert(calls.map(_._2).sum == rows.size)
    assert(calls.size > 10, s"expected the rows cut into many buffers: $calls")
    // The 1 MB row ends its call (the cap is reached); the buffer it grew is dropped at the next call.
    val huge = calls.indexWhere(_._1 > (1 << 20))
    assert(huge >= 0 && calls(huge)._3 > (1 << 20), s"$calls")
    assert(calls(huge + 1)._3 <= 2 * cap, s"buffer not shrunk after the huge row: ${calls(huge + 1)}")
  }

  test("rows of 1 MB strings with a 64 KiB spark.ember.rowBatch.maxBytes: native aggregate and sort") {
    withSQLConf(
      "spark.ember.rowBatch.maxBytes" -> (64 << 10).toString,
      // The rows reach the native block from Spark's own project (rows in, as UnsafeRow bytes).
      "spark.ember.exec.range.enabled" -> "false",
      "spark.ember.exec.project.enabled" -> "false"
    ) {
      def wide = spark
        .range(0, 48, 1, 2)
        .select(
          col("id"),
          (col("id") % 5).as("k"),
          concat(col("id").cast("string"), expr("repeat('ab', 512 * 1024)")).as("s")
        )
      // Grouped by the wide string itself: 1 MB rows into the native aggregate and back out of it.
      checkSparkAnswerAndNative(
        wide.groupBy("s").agg(count(lit(1)).as("n"), sum("id").as("t")),
        Seq(cls[EmberAggregateExec])
      )
      checkSparkAnswerAndNative(wide.orderBy(col("s").desc), Seq(cls[EmberSortExec]), ordered = true)
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

  test("invalid UTF-8 in strings, by every way into a native plan: Spark's answers, or a clear error") {
    withTempPath { dir =>
      val path = dir.getCanonicalPath
      // Spark's strings are bytes: CAST(binary AS STRING) keeps invalid UTF-8, and Spark writes and reads it.
      withEmber(enabled = false) {
        spark
          .range(0, 600, 1, 3)
          .selectExpr(
            "id",
            """CASE id % 6 WHEN 0 THEN CAST(X'FF41' AS STRING) WHEN 1 THEN CAST(X'C3' AS STRING)
              |WHEN 2 THEN CAST(X'EDA080' AS STRING) WHEN 3 THEN 'ü€😀' WHEN 4 THEN '' END AS s""".stripMargin,
            "concat('é', CAST(id % 7 AS STRING), '😀') AS ok"
          )
          .write
          .parquet(path)
      }
      val ways = Seq(
        "the native scan" -> Seq.empty[(String, String)],
        "Spark's columnar scan (Arrow stream)" -> Seq("spark.ember.exec.parquetScan.enabled" -> "false"),
        "Spark's rows (UnsafeRows)" -> Seq(
          "spark.ember.exec.parquetScan.enabled" -> "false",
          "spark.sql.parquet.enableVectorizedReader" -> "false"
        ),
        "Spark's rows (Arrow stream)" -> Seq(
          "spark.ember.exec.parquetScan.enabled" -> "false",
          "spark.sql.parquet.enableVectorizedReader" -> "false",
          "spark.ember.exec.nativeRowToColumnar.enabled" -> "false"
        ),
        "Ember's cache (Arrow IPC)" -> Seq.empty[(String, String)] // last: the cache serves the path's reads
      )
      lazy val cachedTable = {
        val c = spark.read.parquet(path).cache()
        c.count()
        c
      }
      var cachedWay = false
      def t = if (cachedWay) cachedTable else spark.read.parquet(path)
      // Plans that only move, compare, group, join and sort strings carry them as bytes: Spark's answers.
      val bytewise: Seq[(() => DataFrame, Class[_ <: EmberExec])] = Seq(
        (() => t.groupBy("s").count(), cls[EmberAggregateExec]),
        (() => t.select("s").distinct(), cls[EmberAggregateExec]),
        (() => t.groupBy("id").agg(max("s"), min("s")), cls[EmberAggregateExec]),
        (
          () =>
            t.as("a").join(t.as("b"), col("a.s") === col("b.s")).select(col("a.id"), col("b.id"), col("a.s")),
          cls[EmberSpillingHashJoinExec]
        ),
        (
          () => t.where("s = CAST(X'C3' AS STRING) OR s > CAST(X'EDA0' AS STRING)").select("id", "s"),
          cls[EmberFilterExec]
        ),
        (() => t.orderBy(col("s"), col("id")), cls[EmberSortExec]),
        (() => t.repartition(4, col("s")).groupBy("s").agg(count("*"), sum("id")), cls[EmberAggregateExec]),
        (() => t.orderBy(col("s").desc, col("id")).limit(7), cls[EmberTakeOrderedAndProjectExec]),
        (() => t.rollup("s", "ok").agg(count("*"), max("s")), cls[EmberExpandExec]),
        (
          () => t.crossJoin(broadcast(t.select(col("s").as("t")).distinct())).where("s < t"),
          cls[EmberBroadcastNestedLoopJoinExec]
        ),
        (() => t.select("s").union(t.select("ok")).groupBy("s").count(), cls[EmberAggregateExec])
      )
      val textual: Seq[(() => DataFrame, Class[_ <: EmberExec])] = Seq(
        (() => t.selectExpr("upper(s) AS u").groupBy("u").count(), cls[EmberAggregateExec]),
        (
          () =>
            t.selectExpr(
              "id",
              "length(s) AS n",
              "substring(s, 2, 2) AS sub",
              "s LIKE '%A' AS l",
              "lower(s) AS lo",
              "concat(s, ok) AS c"
            ),
          cls[EmberProjectExec]
        ),
        // Text made from no column (Spark's `rand` sequence), a null test of an array of strings.
        (
          () =>
            t.selectExpr(
              "id",
              "s",
              "CAST(CAST(rand(7) * 1000 AS INT) AS STRING) AS r",
              "split(s, 'A') IS NULL AS n"
            ),
          cls[EmberProjectExec]
        ),
        // A function reading text with a scalar subquery's value among its arguments.
        (
          () => {
            t.createOrReplaceTempView("strings_as_bytes")
            spark.sql("SELECT id, substring(s, (SELECT max(id) FROM range(3)), 2) AS p FROM strings_as_bytes")
          },
          cls[EmberProjectExec]
        ),
        // A literal of invalid bytes (carried as bytes) beside a function reading text, in one native plan.
        (
          () => t.where("length(s) = 1 AND s <> CAST(X'C3' AS STRING)").select("id", "s"),
          cls[EmberFilterExec]
        ),
        (
          () =>
            t.selectExpr(
              "id",
              "try_cast(s AS INT) AS i",
              "reverse(s) AS r",
              "trim(s) AS tr",
              "is_valid_utf8(s) AS v",
              "make_valid_utf8(s) AS m"
            ),
          cls[EmberProjectExec]
        )
      )
      for ((way, conf) <- ways) withSQLConf(conf: _*) {
        cachedWay = way.startsWith("Ember's cache")
        if (cachedWay) {
          val df = t.groupBy("s").count()
          df.collect()
          assert(nativeNodes(df).exists(_.simpleString(10).contains("cached table read natively")), way)
        }
        // Valid multi-byte strings, read as text: Spark's rows.
        checkSparkAnswerAndNative(
          t.selectExpr("upper(ok) AS u").groupBy("u").count(),
          Seq(cls[EmberAggregateExec])
        )
        for ((query, native) <- bytewise) {
          checkSparkAnswerAndNative(query(), Seq(native))
          val spark = withEmber(enabled = false)(exactBytes(query()))
          assert(spark.exists(_.contains("ff41")), s"$way: Spark reads the bytes")
          assert(withEmber(enabled = true)(exactBytes(query())) == spark, s"$way: ${query().queryExecution}")
        }
        // Plans that read text: native kernels over valid batches, Spark's own expression over a batch with
        // invalid bytes (proto `Text`), so Spark's answers there too.
        for ((query, native) <- textual) {
          checkSparkAnswerAndNative(query(), Seq(native))
          val spark = withEmber(enabled = false)(exactBytes(query()))
          assert(withEmber(enabled = true)(exactBytes(query())) == spark, s"$way: ${query().queryExecution}")
        }
        // A nondeterministic function reading strings has no twin: Spark evaluates it, never a failed task.
        val random = () => t.selectExpr("id", "concat(s, CAST(rand(7) AS STRING)) AS c")
        assert(
          withEmber(enabled = true)(exactBytes(random())) == withEmber(enabled = false)(exactBytes(random()))
        )
        assertNoNativeMemoryHeld()
      }
      // The cached plan would serve `spark.read.parquet(path)` from here on.
      cachedTable.unpersist(blocking = true)
      cachedWay = false
      // Switched off, plans take strings as UTF-8: invalid bytes fail clearly where they enter.
      withSQLConf("spark.ember.strings.asBytes.enabled" -> "false") {
        for (
          query <- Seq(() => t.groupBy("s").count(), () => t.selectExpr("upper(s) AS u").groupBy("u").count())
        ) {
          val failure = withEmber(enabled = true)(intercept[SparkException](query().collect()))
          assert(Iterator.iterate(failure: Throwable)(_.getCause).takeWhile(_ != null).exists { e =>
            e.getMessage != null && e.getMessage.contains("FAILED_READ_FILE")
          })
        }
      }
    }
  }
}
