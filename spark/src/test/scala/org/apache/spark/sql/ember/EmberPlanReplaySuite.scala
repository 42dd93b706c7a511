package org.apache.spark.sql.ember

import java.nio.file.{Files, Path, Paths, StandardCopyOption}

import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.functions.col
import org.ember.proto

/**
 * Real plans, replayable from their bytes: each query is one native block over a native Parquet scan of a small
 * file. With `-Dember.writePlans=true` (`make plans`) the suite writes, into native/engine/tests/data/plans/,
 * the data file, and per query its serialized `Plan` (`<name>.plan`), the scan's `ParquetScanTask`
 * (`<name>.scan`) and Spark's answer (`<name>.expected.parquet`); `tests/engine/plan_replay.rs` decodes, runs and
 * compares them. Otherwise it checks the queries Ember off vs on, and that the checked-in files exist.
 */
class EmberPlanReplaySuite extends EmberQueryTest {
  private val dir = Paths.get(sys.props.getOrElse("ember.plans", "../native/engine/tests/data/plans"))
  private val write = sys.props.get("ember.writePlans").contains("true")
  private lazy val dataFile: Path = dir.resolve("data.parquet").toAbsolutePath

  private def table: DataFrame = spark.read.parquet(dataFile.toString)

  private val queries: Seq[(String, () => DataFrame)] = Seq(
    "filter_project" -> (() =>
      table
        .where("i % 3 = 1 AND s IS NOT NULL")
        .selectExpr("i", "l * 2 AS l2", "reverse(s) AS rs", "char_length(s) AS n", "d")
    ),
    "sort" -> (() =>
      table.where("l > 0").select("i", "s", "dt").sortWithinPartitions(col("s").desc_nulls_last, col("i"))
    ),
    "cast_case" -> (() =>
      table
        .where("dt >= DATE'2020-03-01'")
        .selectExpr(
          "CASE WHEN f > 1 THEN 'big' ELSE 'small' END AS size",
          "CAST(d AS STRING) AS ds",
          "coalesce(s, 'none') AS s2",
          "i + 1 AS i1"
        )
    )
  )

  /** Writes `df` (one partition) as the single Parquet file `to`. */
  private def writeOne(df: DataFrame, to: Path): Unit = {
    val tmp = Files.createTempDirectory("ember-plans")
    df.coalesce(1).write.mode("overwrite").parquet(tmp.resolve("out").toString)
    val part =
      Files.list(tmp.resolve("out")).filter(_.getFileName.toString.endsWith(".parquet")).findFirst().get
    Files.copy(part, to, StandardCopyOption.REPLACE_EXISTING)
  }

  override def beforeAll(): Unit = {
    super.beforeAll()
    if (write) {
      Files.createDirectories(dir)
      writeOne(
        spark
          .range(0, 200)
          .selectExpr(
            "CAST(id AS INT) AS i",
            "id * 7 - 500 AS l",
            "CASE WHEN id % 7 = 0 THEN NULL ELSE concat('s', CAST(id % 13 AS STRING), 'é') END AS s",
            "CAST(id AS DECIMAL(10, 2)) / 3 AS d",
            "date_add(DATE'2020-01-01', CAST(id AS INT)) AS dt",
            "CAST(id % 5 AS DOUBLE) / 2 AS f"
          ),
        dataFile
      )
    }
  }

  queries.foreach { case (name, query) =>
    test(s"replayable plan: $name") {
      val df = checkSparkAnswerAndNative(query(), Seq(classOf[EmberProjectExec]), ordered = name == "sort")
      val top = executedNodes(df).collectFirst { case e: EmberExec => e }.get
      val built = EmberBlock.build(top)
      assert(built.inputs.size == 1, s"one input: ${df.queryExecution.executedPlan}")
      val input = built.inputs.head
      val scan = input.child match {
        case s: FileSourceScanExec if NativeParquetScan.unsupported(s).isEmpty => s
        case other => fail(s"the block's leaf is not a native Parquet scan: $other")
      }
      if (write) {
        withEmber(enabled = true) {
          val plan = EmberBlock.withInputKinds(built.plan, Seq(proto.InputKind.INPUT_KIND_PARQUET))
          val tasks = NativeParquetScan
            .rdd(scan, input.parquetScanMetrics)
            .map { case InputIterator.Parquet(source) => source.task; case other => sys.error(s"$other") }
            .collect()
          assert(tasks.length == 1, "one task")
          Files.write(dir.resolve(s"$name.plan"), plan.toByteArray)
          Files.write(dir.resolve(s"$name.scan"), tasks.head)
        }
        withEmber(enabled = false)(writeOne(query(), dir.resolve(s"$name.expected.parquet")))
      }
      Seq(s"$name.plan", s"$name.scan", s"$name.expected.parquet").foreach { f =>
        assert(Files.exists(dir.resolve(f)), s"$f is missing: run `make plans`")
      }
    }
  }
}
