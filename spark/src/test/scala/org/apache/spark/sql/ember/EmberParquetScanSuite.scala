package org.apache.spark.sql.ember

import scala.util.Try

import org.apache.spark.{SparkException, SparkRuntimeException, SparkThrowable, SparkUpgradeException}
import org.apache.spark.sql.Row
import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.functions._
import org.apache.spark.sql.types._
import org.ember.jni.EmberNativeException

/**
 * The native Parquet scan (`spark.ember.exec.parquetScan.enabled`): rows identical to Spark's vectorized reader
 * over random data with nulls and extremes, split files, several codecs, column selection by name, schema
 * evolution; scans it does not take stay Spark's, and say why.
 */
class EmberParquetScanSuite extends EmberQueryTest {

  private def splitsRead(df: DataFrame): Long =
    nativeNodes(df).collect { case i: EmberInputExec => i.metrics("parquetSplits").value }.sum

  private def inputs(df: DataFrame): Seq[EmberInputExec] = nativeNodes(df).collect { case i: EmberInputExec =>
    i
  }

  private def messages(e: Throwable): String =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).map(_.getMessage).mkString("\n")

  private def reason(df: DataFrame) = inputs(df).map(_.simpleString(10)).mkString("; ")

  // Every column of DataGen's table.
  private val readable = DataGen.schema.fieldNames.toSeq

  private def write(path: String, rows: Int, codec: String, files: Int = 3): Unit =
    DataGen
      .table(spark, rows, partitions = files)
      .select(readable.map(col): _*)
      .write
      .option("compression", codec)
      .option("parquet.block.size", 16 * 1024) // many row groups, so that splits fall between them
      .parquet(path)

  test("every readable type, split files, every codec: Spark's rows, read natively") {
    for (codec <- Seq("snappy", "gzip", "zstd", "lz4", "lz4_raw", "uncompressed")) {
      withTempPath { dir =>
        val path = dir.getCanonicalPath
        write(path, 3000, codec)
        // Small splits: each file is read as several byte ranges, by different tasks.
        withSQLConf("spark.sql.files.maxPartitionBytes" -> "8192", "spark.sql.files.openCostInBytes" -> "0") {
          val df = checkSparkAnswerAndNative(
            spark.read.parquet(path).where(col("i32").isNull || col("i32") =!= 7),
            Seq(cls[EmberFilterExec])
          )
          assert(splitsRead(df) > 3, s"$codec: files were not split: ${splitsRead(df)}")
          assert(inputs(df).forall(_.simpleString(10).contains("Parquet read natively")))
        }
        // Column subsets in another order, and count(*) (no columns at all).
        checkSparkAnswerAndNative(
          spark.read.parquet(path).select(col("s"), col("dec38"), col("id") * 2),
          Seq(cls[EmberProjectExec])
        )
        checkSparkAnswerAndNative(
          spark.read.parquet(path).groupBy().count(),
          Seq(cls[EmberAggregateExec])
        )
      }
    }
  }

  test("columns by name: case-insensitive by default, missing columns, widened types") {
    withTempPath { dir =>
      val path = dir.getCanonicalPath
      spark
        .range(0, 500, 1, 2)
        .select(col("id").as("Id"), (col("id") % 9).cast("int").as("Small"), col("id").cast("string").as("s"))
        .write
        .parquet(path)
      // A user schema that asks for other cases, a wider type and a column no file has.
      val schema = StructType(
        Seq(
          StructField("ID", LongType),
          StructField("small", LongType),
          StructField("extra", DoubleType),
          StructField("S", StringType)
        )
      )
      val df = checkSparkAnswerAndNative(
        spark.read.schema(schema).parquet(path).where(col("ID") % 3 =!= 0),
        Seq(cls[EmberFilterExec])
      )
      assert(splitsRead(df) > 0)
      withSQLConf("spark.sql.caseSensitive" -> "true") {
        val df = checkSparkAnswerAndNative(
          spark.read.schema(schema).parquet(path).where(col("small").isNull),
          Seq(cls[EmberFilterExec])
        )
        assert(df.count() == 500 && splitsRead(df) > 0)
      }
    }
  }

  test("files written by other writers and older Spark versions (Spark's own test-data)") {
    // Encodings and layouts Spark's Parquet suites test its reader with: decimals in INT32 / INT64 /
    // FIXED_LEN_BYTE_ARRAY (dictionary and plain), DELTA_LENGTH_BYTE_ARRAY strings, a malformed row-group file
    // offset (SPARK-36726), tagged integers, and files the native scan leaves to Spark (nested, timestamps).
    val files = Seq(
      "dec-in-fixed-len.parquet",
      "dec-in-i32.parquet",
      "dec-in-i64.parquet",
      "decimal32-written-as-64-bit.snappy.parquet",
      "decimal32-written-as-64-bit-dict.snappy.parquet",
      "delta_length_byte_array.parquet",
      "malformed-file-offset.parquet",
      "tagged_int.parquet",
      "tagged_long.parquet",
      "parquet-1217.parquet",
      "nested-array-struct.parquet",
      "timemillis-in-i64.parquet"
    )
    var native = 0
    for (name <- files) {
      withTempPath { dir =>
        dir.mkdirs()
        val in = getClass.getClassLoader.getResourceAsStream(s"test-data/$name")
        assert(in != null, s"test-data/$name not on the test classpath")
        try java.nio.file.Files.copy(in, new java.io.File(dir, name).toPath)
        finally in.close()
        val path = dir.getCanonicalPath
        // The flat columns (Ember runs no operator over nested ones); a filter keeps a native operator above
        // the scan, and every row.
        val flat = withEmber(enabled = false)(
          spark.read
            .parquet(path)
            .schema
            .fields
            .collect {
              case f
                  if !f.dataType.isInstanceOf[ArrayType] && !f.dataType.isInstanceOf[StructType] &&
                    !f.dataType.isInstanceOf[MapType] =>
                f.name
            }
            .toSeq
        )
        val df = checkSparkAnswerAndNative(
          spark.read
            .parquet(path)
            .select(flat.map(col): _*)
            .where(col(flat.head).isNull || col(flat.head).isNotNull),
          Seq(cls[EmberFilterExec])
        )
        if (splitsRead(df) > 0) native += 1
      }
    }
    assert(native >= 9, s"only $native of ${files.size} files were read natively")
  }

  test("empty files and empty tables") {
    withTempPath { dir =>
      val path = dir.getCanonicalPath
      spark.range(0).select(col("id"), col("id").cast("string").as("s")).write.parquet(path)
      checkSparkAnswerAndNative(spark.read.parquet(path).where(col("id") > 0), Seq(cls[EmberFilterExec]))
    }
    withTempPath { dir =>
      val path = dir.getCanonicalPath
      // Two files with rows, the rest empty (one file per partition of a mostly empty range).
      spark.range(0, 3, 1, 8).select(col("id"), col("id").cast("string").as("s")).write.parquet(path)
      checkSparkAnswerAndNative(spark.read.parquet(path).where(col("id") >= 0), Seq(cls[EmberFilterExec]))
    }
  }

  /** The first Spark error condition in `e`'s cause chain, with its message parameters. */
  private def condition(e: Throwable): Option[(String, Map[String, String])] =
    Iterator
      .iterate(e)(_.getCause)
      .takeWhile(_ != null)
      .collectFirst {
        case t: org.apache.spark.SparkThrowable
            if t.getCondition != null && t.getCondition.startsWith("FAILED") =>
          import scala.jdk.CollectionConverters._
          t.getCondition -> t.getMessageParameters.asScala.toMap
      }

  /** The condition Spark raises for `query` and the one Ember raises, which must be the same. */
  private def sameReadError(query: () => DataFrame): (String, Map[String, String]) = {
    val spark = withEmber(enabled = false)(intercept[SparkException](query().collect()))
    val ember = withEmber(enabled = true)(intercept[SparkException](query().collect()))
    // Raised by the native reader: its error is the cause.
    assert(
      Iterator
        .iterate(ember: Throwable)(_.getCause)
        .takeWhile(_ != null)
        .exists(_.isInstanceOf[EmberNativeException]),
      s"not raised natively: $ember"
    )
    assert(condition(spark).isDefined, s"Spark raised no read condition: $spark")
    assert(condition(ember) == condition(spark), s"Ember: $ember\nSpark: $spark")
    assertNoNativeMemoryHeld()
    condition(ember).get
  }

  test("a type the file cannot widen to: Spark's PARQUET_COLUMN_DATA_TYPE_MISMATCH, same parameters") {
    withTempPath { dir =>
      val path = dir.getCanonicalPath
      spark.range(0, 10).select(col("id")).coalesce(1).write.parquet(path) // one file: one failing task
      val schema = StructType(Seq(StructField("id", IntegerType)))
      val (cond, params) = sameReadError(() => spark.read.schema(schema).parquet(path).where(col("id") > 1))
      assert(
        cond == "FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH" && params("column") == "[id]",
        params
      )
    }
  }

  test("duplicate fields in case-insensitive mode: Spark's condition under FAILED_READ_FILE, as Spark's") {
    withTempPath { dir =>
      val path = dir.getCanonicalPath
      withSQLConf("spark.sql.caseSensitive" -> "true") {
        spark.range(0, 10).selectExpr("id as a", "id as B", "id as b").coalesce(1).write.parquet(path)
      }
      val read = () => spark.read.schema("a LONG, b LONG").parquet(path).where(col("b") > 0)
      val sparkError = withEmber(enabled = false)(intercept[SparkException](read().collect()))
      val emberError = withEmber(enabled = true)(intercept[SparkException](read().collect()))
      def duplicate(e: Throwable): SparkRuntimeException =
        Iterator
          .iterate(e)(_.getCause)
          .takeWhile(_ != null)
          .collectFirst { case r: SparkRuntimeException => r }
          .get
      assert(condition(emberError) == condition(sparkError), s"Ember: $emberError\nSpark: $sparkError")
      val (s, e) = (duplicate(sparkError), duplicate(emberError))
      assert(e.getCondition == s.getCondition && e.getMessageParameters == s.getMessageParameters, e)
      assert(e.getMessage.contains("Found duplicate field(s) \"b\": [B, b] in case-insensitive mode"), e)
      assertNoNativeMemoryHeld()
    }
  }

  test("corrupt files: Spark's FAILED_READ_FILE condition naming the file") {
    withTempPath { dir =>
      val path = dir.getCanonicalPath
      spark.range(0, 1000).selectExpr("id", "cast(id as string) s").coalesce(1).write.parquet(path)
      val file = new java.io.File(path).listFiles().find(_.getName.endsWith(".parquet")).get
      val bytes = java.nio.file.Files.readAllBytes(file.toPath)
      val schema = StructType(Seq(StructField("id", LongType), StructField("s", StringType)))
      val read = () => spark.read.schema(schema).parquet(path).where(col("id") > 1)
      // Bad magic at the end, then a truncated footer, then garbage in the middle of the data pages.
      val corruptions = Seq[Array[Byte] => Array[Byte]](
        b => b.updated(b.length - 1, 'X'.toByte),
        b => b.take(b.length - 20),
        b => b.zipWithIndex.map { case (x, i) => if (i > 8 && i < b.length / 2) (x ^ 0x5a).toByte else x }
      )
      for (corrupt <- corruptions) {
        java.nio.file.Files.write(file.toPath, corrupt(bytes))
        val (cond, params) = sameReadError(read)
        assert(cond.startsWith("FAILED_READ_FILE") && params("path").contains(file.getName), params)
      }
    }
  }

  test("scans it does not take stay Spark's and say why") {
    withTempPath { dir =>
      val path = dir.getCanonicalPath
      DataGen.table(spark, 300).write.partitionBy("b").parquet(path)
      // INT96 timestamps shifted to the session time zone.
      withSQLConf("spark.sql.parquet.int96TimestampConversion" -> "true") {
        val shifted = checkSparkAnswerAndNative(
          spark.read.parquet(path).where(col("id") > 10).select(col("id"), col("ts")),
          Seq(cls[EmberFilterExec])
        )
        assert(reason(shifted).contains("int96TimestampConversion is true"), reason(shifted))
      }
      withSQLConf("spark.ember.exec.parquetScan.enabled" -> "false") {
        val off = checkSparkAnswerAndNative(
          spark.read.parquet(path).where(col("id") > 10).select(col("id"), col("s")),
          Seq(cls[EmberFilterExec])
        )
        assert(splitsRead(off) == 0 && reason(off).contains("parquetScan.enabled is false"), reason(off))
      }
    }
  }

  test("partitioned tables: partition values (NULLs included) appended as Spark appends them") {
    withTempPath { dir =>
      val path = dir.getCanonicalPath
      val strings = Seq("a", "ü€", "x y", "a=b/c", null)
      val dates = Seq("1970-01-01", "0001-01-01", "2024-02-29", null)
      val rows = (0 until 400).map { i =>
        Row(
          i.toLong,
          if (i % 11 == 0) null else i * 7,
          s"row $i",
          if (i % 5 == 0) null else i % 3,
          strings(i % strings.size),
          dates(i % dates.size)
        )
      }
      val schema = StructType(
        Seq(
          StructField("id", LongType),
          StructField("v", IntegerType),
          StructField("s", StringType),
          StructField("p_int", IntegerType),
          StructField("p_str", StringType),
          StructField("p_date", StringType)
        )
      )
      spark
        .createDataFrame(spark.sparkContext.parallelize(rows, 3), schema)
        .withColumn("p_date", col("p_date").cast(DateType))
        .write
        .partitionBy("p_int", "p_str", "p_date")
        .parquet(path)
      val table = () => spark.read.parquet(path)
      assert(
        table().schema.map(f => f.name -> f.dataType).takeRight(3) ==
          Seq("p_int" -> IntegerType, "p_str" -> StringType, "p_date" -> DateType)
      )
      val queries: Seq[() => DataFrame] = Seq(
        () => table().where(col("v").isNull || col("v") > 100),
        // Filters on partition columns: Spark prunes the files, the rows are read natively.
        () => table().where(col("p_int") > 0 && col("v").isNotNull),
        () => table().where(col("p_str") === "ü€" && col("id") > 3),
        () => table().where(col("p_date").isNull && col("id") =!= 3),
        () =>
          table().where(
            (col("p_str").isNull || col("p_date") < lit("2000-01-01").cast(DateType)) && col("id") >= 0
          ),
        // Only partition columns, and none at all.
        () => table().where(col("id") > 10).select(col("p_date"), col("p_int")),
        () => table().where(col("p_int").isNotNull).groupBy().count()
      )
      for ((q, i) <- queries.zipWithIndex) {
        val df = checkSparkAnswerAndNative(q(), Seq(cls[EmberFilterExec], cls[EmberAggregateExec]))
        assert(splitsRead(df) > 0, s"query $i: ${reason(df)}\n${df.queryExecution.executedPlan}")
      }
    }
  }

  private val rebaseConfs = Seq(
    "spark.sql.parquet.datetimeRebaseModeInRead",
    "spark.sql.parquet.int96RebaseModeInRead"
  )

  /** The Spark condition of `t` (or of a cause), with its parameters. */
  private def sparkCondition(t: Throwable): Option[(String, Map[String, String])] = {
    import scala.jdk.CollectionConverters._
    Iterator
      .iterate(t)(_.getCause)
      .takeWhile(_ != null)
      .collectFirst {
        case s: SparkThrowable if s.getCondition != null && !s.getCondition.startsWith("FAILED_READ_FILE") =>
          s.getCondition -> s.getMessageParameters.asScala.toMap
      }
  }

  /**
   * `query` with Ember off and on: the same rows, or the same error condition with the same parameters
   * (a SparkUpgradeException, as Spark throws it); with `native`, the scan must have been read natively.
   * Returns Spark's outcome.
   */
  private def sameOutcome(query: () => DataFrame, native: Boolean): Try[Seq[Row]] = {
    val spark = withEmber(enabled = false)(Try(query().collect().toSeq))
    spark.failed.foreach { e =>
      val ember = withEmber(enabled = true) {
        val df = query()
        val e = intercept[Throwable](df.collect())
        if (native) assert(inputs(df).exists(_.simpleString(10).contains("read natively")), reason(df))
        e
      }
      assert(sparkCondition(e).isDefined, s"Spark: $e")
      assert(sparkCondition(ember) == sparkCondition(e), s"Ember: $ember\nSpark: $e")
      assert(
        Iterator
          .iterate(ember)(_.getCause)
          .takeWhile(_ != null)
          .exists(_.isInstanceOf[SparkUpgradeException]) ==
          Iterator.iterate(e)(_.getCause).takeWhile(_ != null).exists(_.isInstanceOf[SparkUpgradeException])
      )
      assertNoNativeMemoryHeld()
    }
    spark.foreach { _ =>
      val df = checkSparkAnswerAndNative(query(), Seq(cls[EmberFilterExec]))
      if (native) assert(splitsRead(df) > 0, reason(df))
    }
    spark
  }

  private val dates =
    Seq(
      "0001-01-01",
      "1000-03-01",
      "1582-10-04",
      "1582-10-15",
      "1899-12-31",
      "1900-01-01",
      "1970-01-01",
      "9999-12-31"
    )
  private val ancientTimestamps = Seq(
    "0001-01-01 00:00:00",
    "1000-03-01 01:02:03.000004",
    "1582-10-04 12:34:56.123456",
    "1582-10-15 00:00:00.000001",
    "1899-12-31 23:59:59.999999"
  )
  private val modernTimestamps =
    Seq(
      "1900-01-01 00:00:00",
      "1969-12-31 23:59:59.999999",
      "2024-06-30 12:00:00.5",
      "9999-12-31 23:59:59.999999"
    )

  /** Dates, timestamps and timestamp_ntz (from the same strings), with a row of NULLs. */
  private def temporalTable(timestamps: Seq[String]): DataFrame = {
    val n = math.max(dates.size, timestamps.size)
    val rows = (0 until n).map(i => Row(i.toLong, dates(i % dates.size), timestamps(i % timestamps.size))) :+
      Row(n.toLong, null, null)
    val schema = StructType(
      Seq(StructField("id", LongType), StructField("d", StringType), StructField("t", StringType))
    )
    spark
      .createDataFrame(spark.sparkContext.parallelize(rows, 2), schema)
      .select(
        col("id"),
        col("d").cast(DateType).as("d"),
        col("t").cast(TimestampType).as("ts"),
        col("t").cast(TimestampNTZType).as("ntz")
      )
  }

  test("dates and timestamps written in every writer mode, read in every read mode, as Spark reads them") {
    withSQLConf("spark.sql.session.timeZone" -> "America/Los_Angeles") {
      for (
        output <- Seq("INT96", "TIMESTAMP_MICROS", "TIMESTAMP_MILLIS"); written <- Seq("CORRECTED", "LEGACY")
      ) {
        withTempPath { dir =>
          val path = dir.getCanonicalPath
          withSQLConf(
            "spark.sql.parquet.outputTimestampType" -> output,
            "spark.sql.parquet.datetimeRebaseModeInWrite" -> written,
            "spark.sql.parquet.int96RebaseModeInWrite" -> written
          ) {
            temporalTable(ancientTimestamps ++ modernTimestamps).write.parquet(path)
          }
          // Files written by Spark 4 say how they were written: CORRECTED reads as EXCEPTION does. A LEGACY
          // file names its writer's session zone, which the rebase uses whatever the reader's session zone.
          for (mode <- Seq("EXCEPTION", "LEGACY"); zone <- Seq("America/Los_Angeles", "Asia/Kolkata")) {
            withSQLConf((rebaseConfs.map(_ -> mode) :+ ("spark.sql.session.timeZone" -> zone)): _*) {
              val all = () => spark.read.parquet(path).where(col("id") =!= -1)
              val result = sameOutcome(all, native = true)
              assert(result.isSuccess, s"$output/$written/$mode: $result") // files written by Spark 4 say how
              // Dates and TIMESTAMP_NTZ alone: native in every mode (LEGACY dates rebased natively).
              sameOutcome(
                () => spark.read.parquet(path).select("id", "d", "ntz").where(col("id") =!= -1),
                native = true
              )
            }
          }
        }
      }
    }
  }

  test("LEGACY timestamps before year 1 and in zones without a table: Spark's calendar, read natively") {
    // Before 0001-01-01, or written in a fixed-offset zone Spark has no table for: Spark rebases these with
    // java.util.Calendar, which the native reader calls on the JVM for just those values.
    for ((zone, output) <- Seq("America/Los_Angeles" -> "TIMESTAMP_MICROS", "+05:17" -> "INT96")) {
      withTempPath { dir =>
        val path = dir.getCanonicalPath
        withSQLConf(
          "spark.sql.session.timeZone" -> zone,
          "spark.sql.parquet.outputTimestampType" -> output,
          "spark.sql.parquet.datetimeRebaseModeInWrite" -> "LEGACY",
          "spark.sql.parquet.int96RebaseModeInWrite" -> "LEGACY"
        ) {
          spark
            .range(0, 600, 1, 2)
            .selectExpr(
              "id",
              "CASE WHEN id % 5 = 0 THEN NULL ELSE " +
                "timestamp_micros(-62135596800000000L - 31557600000000L * (id - 300) + id * 3600000000L) END AS ts"
            )
            .write
            .parquet(path)
        }
        withSQLConf("spark.sql.session.timeZone" -> zone) {
          val result = sameOutcome(
            () =>
              spark.read
                .parquet(path)
                .where(col("id") =!= -1)
                .select(col("id"), col("ts"), col("ts").cast("string")),
            native = true
          )
          assert(result.isSuccess && result.get.size == 600, s"$zone/$output: $result")
        }
      }
    }
  }

  test("Spark 2.4 and 3.2 files with ancient dates and timestamps (Spark's own test-data), every read mode") {
    // Files that name no zone are rebased in the JVM's default one, as the files were written in.
    val default = java.util.TimeZone.getDefault
    java.util.TimeZone.setDefault(java.util.TimeZone.getTimeZone("America/Los_Angeles"))
    try spark24Files()
    finally java.util.TimeZone.setDefault(default)
  }

  private def spark24Files(): Unit = {
    val versions = Seq("v2_4_5", "v2_4_6", "v3_2_0")
    val kinds =
      Seq("date", "timestamp_int96_dict", "timestamp_int96_plain", "timestamp_micros", "timestamp_millis")
    for (kind <- kinds; version <- versions) {
      val name = s"before_1582_${kind}_$version.snappy.parquet"
      withTempPath { dir =>
        dir.mkdirs()
        val in = getClass.getClassLoader.getResourceAsStream(s"test-data/$name")
        assert(in != null, s"test-data/$name not on the test classpath")
        try java.nio.file.Files.copy(in, new java.io.File(dir, name).toPath)
        finally in.close()
        val path = dir.getCanonicalPath
        for (mode <- Seq("EXCEPTION", "CORRECTED", "LEGACY")) {
          withSQLConf(rebaseConfs.map(_ -> mode): _*) {
            val query = () => {
              val df = spark.read.parquet(path)
              df.where(col(df.columns.head).isNotNull || col(df.columns.head).isNull)
            }
            val result = sameOutcome(query, native = true)
            // Spark's own expectations of these files.
            assert(result.isFailure == (version == "v2_4_5" && mode == "EXCEPTION"), s"$name/$mode: $result")
          }
        }
      }
    }
  }

  /** A metric of the native Parquet scans (their `EmberInput` nodes) of `df`'s plan, summed. */
  private def scanMetric(df: DataFrame, name: String): Long =
    nativeNodes(df).collect { case i: EmberInputExec => i.metrics(name).value }.sum

  private def rowGroupsPruned(df: DataFrame): Long = scanMetric(df, "parquetRowGroupsPruned")

  /** The input metrics of the tasks `f` runs (Spark's "Input Size / Records"): bytes and records read. */
  private def taskInput(f: => Unit): (Long, Long) = {
    val bytes = new java.util.concurrent.atomic.AtomicLong
    val records = new java.util.concurrent.atomic.AtomicLong
    val listener = new org.apache.spark.scheduler.SparkListener {
      override def onTaskEnd(end: org.apache.spark.scheduler.SparkListenerTaskEnd): Unit =
        Option(end.taskMetrics).foreach { m =>
          bytes.addAndGet(m.inputMetrics.bytesRead)
          records.addAndGet(m.inputMetrics.recordsRead)
        }
    }
    spark.sparkContext.listenerBus.waitUntilEmpty()
    spark.sparkContext.addSparkListener(listener)
    try {
      f
      spark.sparkContext.listenerBus.waitUntilEmpty()
    } finally spark.sparkContext.removeSparkListener(listener)
    (bytes.get, records.get)
  }

  test("bytes and records read reach the task's input metrics and the scan's metric, as Spark's scan") {
    withTempPath { dir =>
      val path = dir.getCanonicalPath
      write(path, 3000, "snappy")
      def q = spark.read.parquet(path).where(col("i32").isNotNull).agg(count(lit(1)), sum("i32"))
      val (sparkBytes, sparkRecords) = taskInput(withEmber(enabled = false)(q.collect()))
      var df: DataFrame = null
      val (emberBytes, emberRecords) = taskInput(withEmber(enabled = true) { df = q; df.collect() })
      assert(splitsRead(df) > 0, reason(df))
      // Every row of the files, as Spark counts them (the filter is applied above the scan on both sides).
      assert(
        emberRecords == sparkRecords && sparkRecords == 3000,
        s"records: Ember $emberRecords, Spark $sparkRecords"
      )
      // Both read the footers and the two columns' chunks; readers differ in what else they fetch.
      assert(emberBytes > 0 && sparkBytes > 0, s"bytes: Ember $emberBytes, Spark $sparkBytes")
      assert(scanMetric(df, "parquetBytesRead") == emberBytes)
    }
  }

  test("row groups skipped by statistics of pushed filters, never changing the answer") {
    withTempPath { dir =>
      val path = dir.getCanonicalPath
      // Sorted columns in many row groups, so statistics tell them apart; NULLs in runs and scattered, NaN
      // and -0.0 in a double column (never used for skipping), multi-byte strings.
      spark
        .range(0, 20000, 1, 1)
        .select(
          col("id"),
          (col("id") / 7).cast(IntegerType).as("i"),
          when(col("id") % 5000 < 1000, lit(null)).otherwise(col("id")).as("n"),
          format_string("k%05d€", col("id")).as("s"),
          date_add(lit("1990-01-01").cast(DateType), (col("id") / 10).cast(IntegerType)).as("d"),
          when(col("id") % 3 === 0, lit(Double.NaN))
            .when(col("id") % 3 === 1, lit(-0.0))
            .otherwise(lit(0.0))
            .as("f")
        )
        .write
        .option("parquet.block.size", 16 * 1024)
        .parquet(path)
      val t = () => spark.read.parquet(path)
      val pruning: Seq[(String, () => DataFrame)] = Seq(
        "id <" -> (() => t().where(col("id") < 300)),
        "id >= and i <>" -> (() => t().where(col("id") >= 19500 && col("i") =!= 3)),
        "i = / <=" -> (() => t().where(col("i") === 1500 && col("id") <= 19000)),
        "s >" -> (() => t().where(col("s") > "k19900")),
        "s =" -> (() => t().where(col("s") === "k12345€")),
        "d <" -> (() => t().where(col("d") < lit("1990-02-01").cast(DateType))),
        "id in" -> (() => t().where(col("id").isin(5, 17, 19999))),
        "n is null" -> (() => t().where(col("n").isNull && col("id") > 4000)),
        // Runs of 1000 NULLs: whole row groups of them.
        "n is not null" -> (() => t().where(col("n").isNotNull)),
        "literal on the left" -> (() => t().where(lit(100L) > col("id")))
      )
      for ((name, q) <- pruning) {
        val df = checkSparkAnswerAndNative(q(), Seq(cls[EmberFilterExec]))
        assert(splitsRead(df) > 0 && rowGroupsPruned(df) > 0, s"$name: ${rowGroupsPruned(df)} pruned")
        withSQLConf("spark.ember.parquetScan.pushdown.enabled" -> "false") {
          val off = checkSparkAnswerAndNative(q(), Seq(cls[EmberFilterExec]))
          assert(rowGroupsPruned(off) == 0, name)
        }
      }
      // Filters that must not skip anything: on doubles (NaN, -0.0), OR across columns, nothing to prove.
      val kept: Seq[(String, () => DataFrame)] = Seq(
        "f = 0.0" -> (() => t().where(col("f") === 0.0)),
        "f > 0 or f < 0" -> (() => t().where(col("f") > 0.0 || col("f") < 0.0)),
        "or" -> (() => t().where(col("id") < 10 || col("s") > "k19990")),
        "id = null" -> (() => t().where(col("id") === lit(null).cast(LongType) || col("i") > -1))
      )
      for ((name, q) <- kept) {
        val df = checkSparkAnswerAndNative(q(), Seq(cls[EmberFilterExec]))
        assert(splitsRead(df) > 0 && rowGroupsPruned(df) == 0, s"$name: ${rowGroupsPruned(df)} pruned")
      }
    }
  }

  test("pages skipped by the page index and rows filtered in the reader, never changing the answer") {
    withTempPath { dir =>
      val path = dir.getCanonicalPath
      // One row group of 20,000 rows in pages of 100: sorted id, date and string; `k` in runs of 50 (0, 1 | 2, 3
      // | 0, 1 … per page); `r`, `m` and `n` scattered, with NULLs; multi-byte strings.
      spark
        .range(0, 20000, 1, 1)
        .select(
          col("id"),
          date_add(lit("1990-01-01").cast(DateType), (col("id") / 10).cast(IntegerType)).as("d"),
          format_string("k%05d€", col("id")).as("s"),
          ((col("id") / 50).cast(IntegerType) % 4).as("k"),
          (abs(hash(col("id"))) % 7).as("r"),
          when(col("id") % 11 === 0, lit(null))
            .otherwise(((abs(hash(col("id"), lit(1))) % 1000) / 100).cast(DecimalType(10, 2)))
            .as("m"),
          when(col("id") % 13 === 0, lit(null)).otherwise(format_string("ü%d", col("id") % 17)).as("n")
        )
        .write
        .option("parquet.page.row.count.limit", 100)
        .option("parquet.page.size", 1024)
        .parquet(path)
      val t = () => spark.read.parquet(path)
      val queries: Seq[(String, Boolean, () => DataFrame)] = Seq(
        ("id range", true, () => t().where(col("id") >= 1234 && col("id") < 1789)),
        ("d <", true, () => t().where(col("d") < lit("1990-03-01").cast(DateType))),
        ("s >=", true, () => t().where(col("s") >= "k19950")),
        ("id in", true, () => t().where(col("id").isin(7L, 15000L, 19999L))),
        ("id and m", true, () => t().where(col("id") > 18000 && col("m") >= lit(BigDecimal("5.00")))),
        ("k =", true, () => t().where(col("k") === 0)),
        ("r = and m is null", false, () => t().where(col("r") === 3 && col("m").isNull)),
        ("n = and m <", false, () => t().where(col("n") === "ü5" && col("m") < lit(BigDecimal("2.50")))),
        ("n in", false, () => t().where(col("n").isin("ü1", "ü16", "none"))),
        ("nothing passes", false, () => t().where(col("k") === 9))
      )
      for ((name, sorted, q) <- queries; rowFilter <- Seq("false", "true")) {
        withSQLConf("spark.ember.parquetScan.rowFilter.enabled" -> rowFilter) {
          val df = checkSparkAnswerAndNative(q(), Seq(cls[EmberFilterExec]))
          val (pages, rows) = (scanMetric(df, "parquetPagesPruned"), scanMetric(df, "parquetRowsSkipped"))
          if (sorted) assert(pages > 0 && rows > 0, s"$name/$rowFilter: $pages pages, $rows rows")
          else assert(pages == 0, s"$name/$rowFilter: $pages pages")
          // `k` = 0 on half of the pages, in runs of 50 on those: the pages skip the other half, the row filter
          // (never paused: the runs are long) the rest exactly.
          if (name == "k =" && rowFilter == "true") assert(rows == 15000, s"$name: $rows rows")
          if (name == "k =" && rowFilter == "false") assert(rows < 15000, s"$name: $rows rows")
        }
      }
    }
  }
}
