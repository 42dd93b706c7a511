package org.apache.spark.sql.ember

import org.apache.spark.SparkException
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

  // Every non-temporal column of DataGen's table.
  private val readable = DataGen.schema.fieldNames.filterNot(Set("dt", "ts", "ntz")).toSeq

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
          Seq(cls[EmberHashAggregateExec])
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
      def reason(df: DataFrame) = inputs(df).map(_.simpleString(10)).mkString("; ")
      // Dates and timestamps (calendar rebasing), and partition columns.
      val dated = checkSparkAnswerAndNative(
        spark.read.parquet(path).where(col("id") > 10).select(col("id"), col("dt"), col("ts"), col("b")),
        Seq(cls[EmberFilterExec])
      )
      assert(reason(dated).contains("file scan read by Spark: partition columns"), reason(dated))
      assert(splitsRead(dated) == 0)
      withSQLConf("spark.ember.exec.parquetScan.enabled" -> "false") {
        val off = checkSparkAnswerAndNative(
          spark.read.parquet(path).where(col("id") > 10).select(col("id"), col("s")),
          Seq(cls[EmberFilterExec])
        )
        assert(splitsRead(off) == 0 && reason(off).contains("parquetScan.enabled is false"), reason(off))
      }
    }
    withTempPath { dir =>
      val path = dir.getCanonicalPath
      DataGen.table(spark, 300).write.parquet(path)
      val dated = checkSparkAnswerAndNative(
        spark.read.parquet(path).where(col("id") > 10).select(col("id"), col("dt")),
        Seq(cls[EmberFilterExec])
      )
      assert(inputs(dated).map(_.simpleString(10)).exists(_.contains("dt: date is read by Spark")))
    }
  }
}
