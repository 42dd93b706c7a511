package org.apache.spark.sql.ember

import java.time.{Instant, LocalDate, LocalDateTime}

import scala.util.Random

import org.apache.spark.sql.Row
import org.apache.spark.sql.classic.{DataFrame, SparkSession}
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types._

/**
 * Random tables with nulls and extremes (MIN/MAX, NaN, ±0.0, infinities, empty strings), spread over several
 * partitions of which one is empty. Column `id` is unique, for deterministic ordering.
 */
object DataGen {

  val schema: StructType = StructType(
    Seq(
      StructField("id", LongType, nullable = false),
      StructField("b", BooleanType),
      StructField("i8", ByteType),
      StructField("i16", ShortType),
      StructField("i32", IntegerType),
      StructField("i64", LongType),
      StructField("f32", FloatType),
      StructField("f64", DoubleType),
      StructField("dec", DecimalType(10, 2)),
      StructField("dec38", DecimalType(38, 10)),
      StructField("s", StringType),
      StructField("bin", BinaryType),
      StructField("dt", DateType),
      StructField("ts", TimestampType),
      StructField("ntz", TimestampNTZType)
    )
  )

  private def pick[T](r: Random, extremes: Seq[T], random: => T): T =
    if (r.nextInt(5) == 0) extremes(r.nextInt(extremes.size)) else random

  private def maybeNull(r: Random, v: Any): Any = if (r.nextInt(7) == 0) null else v

  def row(r: Random, id: Long): Row = Row(
    id,
    maybeNull(r, r.nextBoolean()),
    maybeNull(r, pick(r, Seq(Byte.MinValue, Byte.MaxValue, 0.toByte), r.nextInt(256).toByte)),
    maybeNull(r, pick(r, Seq(Short.MinValue, Short.MaxValue, 0.toShort), (r.nextInt(2000) - 1000).toShort)),
    maybeNull(r, pick(r, Seq(Int.MinValue, Int.MaxValue, 0, -1), r.nextInt(2000) - 1000)),
    maybeNull(r, pick(r, Seq(Long.MinValue, Long.MaxValue, 0L, -1L), r.nextLong() % 100000L)),
    maybeNull(
      r,
      pick(
        r,
        Seq(Float.NaN, -0.0f, 0.0f, Float.PositiveInfinity, Float.NegativeInfinity, Float.MinPositiveValue),
        r.nextFloat() * 100 - 50
      )
    ),
    maybeNull(
      r,
      pick(
        r,
        Seq(
          Double.NaN,
          -0.0,
          0.0,
          Double.PositiveInfinity,
          Double.NegativeInfinity,
          Double.MaxValue,
          -Double.MaxValue
        ),
        r.nextGaussian() * 1000
      )
    ),
    maybeNull(
      r,
      pick(
        r,
        Seq(BigDecimal("99999999.99"), BigDecimal("-99999999.99"), BigDecimal(0)),
        BigDecimal(r.nextInt(100000), 2)
      ).bigDecimal
    ),
    maybeNull(
      r,
      pick(
        r,
        Seq(BigDecimal("9999999999999999999999999999.9999999999"), BigDecimal("-0.0000000001")),
        BigDecimal(r.nextLong(), 10)
      ).bigDecimal
    ),
    maybeNull(r, pick(r, Seq("", " ", "ä€😀", "NULL", "a" * 100), s"s${r.nextInt(50)}")),
    maybeNull(
      r,
      pick(r, Seq(Array.emptyByteArray, Array[Byte](0, -1)), Array.fill(r.nextInt(5))(r.nextInt(256).toByte))
    ),
    maybeNull(
      r,
      pick(
        r,
        Seq(LocalDate.of(1, 1, 1), LocalDate.of(9999, 12, 31), LocalDate.of(1970, 1, 1)),
        LocalDate.ofEpochDay(r.nextInt(40000) - 10000)
      )
    ),
    maybeNull(
      r,
      pick(
        r,
        Seq(Instant.EPOCH, Instant.parse("1900-01-01T00:00:00Z")),
        Instant.ofEpochSecond(r.nextInt(2000000000), r.nextInt(1000000) * 1000L)
      )
    ),
    maybeNull(
      r,
      pick(
        r,
        Seq(LocalDateTime.of(2000, 2, 29, 23, 59, 59)),
        LocalDateTime.of(
          1970 + r.nextInt(100),
          1 + r.nextInt(12),
          1 + r.nextInt(28),
          r.nextInt(24),
          r.nextInt(60)
        )
      )
    )
  )

  /** `rows` random rows in `partitions` partitions plus an empty first partition. */
  /**
   * One side of a join test over a small key domain (many matches, duplicate keys, null keys): columns named
   * `<p>id`, `<p>k` (i32 % 40), `<p>s`, `<p>v` (i64), `<p>d` (dec), `<p>dt`, `<p>f` (f64).
   */
  def joinSide(df: DataFrame, p: String): DataFrame = df.select(
    col("id").as(s"${p}id"),
    (col("i32") % 40).as(s"${p}k"),
    col("s").as(s"${p}s"),
    col("i64").as(s"${p}v"),
    col("dec").as(s"${p}d"),
    col("dt").as(s"${p}dt"),
    col("f64").as(s"${p}f")
  )

  def table(spark: SparkSession, rows: Int, partitions: Int = 3, seed: Long = 42): DataFrame = {
    val r = new Random(seed)
    val data = (0 until rows).map(i => row(r, i.toLong))
    val sc = spark.sparkContext
    val rdd = sc.parallelize(Seq.empty[Row], 1).union(sc.parallelize(data, partitions))
    spark.createDataFrame(rdd, schema)
  }
}
