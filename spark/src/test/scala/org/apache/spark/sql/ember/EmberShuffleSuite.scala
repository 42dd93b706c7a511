package org.apache.spark.sql.ember

import org.apache.spark.SparkConf
import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.catalyst.plans.physical.RangePartitioning
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.execution.joins.BroadcastHashJoinExec
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.aggregate.HashAggregateExec
import org.apache.spark.sql.execution.adaptive.AQEShuffleReadExec
import org.apache.spark.sql.functions._

/**
 * Ember's columnar shuffle (`EmberShuffleExchangeExec`): rows are routed to exactly the partitions Spark's own
 * exchange would pick (checked row by row against Spark's `pmod(hash(keys), n)`, and by joining a natively
 * shuffled side with a bucketed table Spark hashed), and every query gives Spark's rows — native and Spark
 * consumers, AQE coalescing, skew splits and local reads, empty inputs, small flushes, several blocks.
 */
class EmberShuffleSuite extends EmberQueryTest {

  override protected def sparkConf: SparkConf = super.sparkConf
    .set("spark.ember.exec.shuffle.enabled", "true")

  private lazy val data: DataFrame = DataGen.table(spark, 3000, partitions = 4, seed = 7).cache()

  private val keyColumns =
    Seq("b", "i8", "i16", "i32", "i64", "f32", "f64", "dec", "dec38", "s", "bin", "dt", "ts", "ntz")

  private def exchanges(df: DataFrame): Seq[SparkPlan] = executedNodes(df).collect {
    case e: EmberShuffleExchangeExec => e
    case s: ShuffleExchangeExec => s
  }

  private def nativeShuffles(df: DataFrame): Seq[EmberShuffleExchangeExec] =
    executedNodes(df).collect { case e: EmberShuffleExchangeExec => e }

  /** Spark's rows with Ember off; with Ember on, the same rows and every exchange native. */
  private def checkNativeShuffle(query: => DataFrame, ordered: Boolean = false): DataFrame = {
    val df = checkSparkAnswerAndNative(query, Nil, ordered)
    assert(nativeShuffles(df).nonEmpty, s"no EmberShuffleExchange in\n${df.queryExecution.executedPlan}")
    assert(
      !exchanges(df).exists(_.isInstanceOf[ShuffleExchangeExec]),
      s"an exchange stayed in Spark:\n${df.queryExecution.executedPlan}"
    )
    df
  }

  test("every row lands in the partition Spark's hash partitioning picks, for every key type") {
    withEmber(enabled = true) {
      for (keys <- keyColumns.map(Seq(_)) :+ Seq("i32", "s", "dec38", "f64"); n <- Seq(1, 7, 200)) {
        val cols = keys.map(col)
        val df = data
          .repartition(n, cols: _*)
          .select(col("id"), spark_partition_id().as("pid"), pmod(hash(cols: _*), lit(n)).as("spark_pid"))
        val rows = df.collect()
        assert(nativeShuffles(df).nonEmpty, s"$keys: no native shuffle in\n${df.queryExecution.executedPlan}")
        assert(rows.length == 3000)
        val wrong = rows.filter(r => r.getInt(1) != r.getInt(2))
        assert(
          wrong.isEmpty,
          s"$keys into $n: ${wrong.length} rows in the wrong partition, e.g. ${wrong.headOption}"
        )
      }
      assertNoNativeMemoryHeld()
    }
  }

  test("a natively shuffled side joins a bucketed table that Spark hashed") {
    withTable("bucketed") {
      withEmber(enabled = false) {
        data.write.bucketBy(8, "i32", "s").format("parquet").saveAsTable("bucketed")
      }
      withSQLConf(
        "spark.sql.autoBroadcastJoinThreshold" -> "-1",
        "spark.sql.adaptive.enabled" -> "false",
        "spark.sql.shuffle.partitions" -> "8"
      ) {
        def q = spark
          .table("bucketed")
          .select(col("i32"), col("s"), col("id").as("bid"))
          .join(data.select(col("i32"), col("s"), col("id")), Seq("i32", "s"))
        val df = checkSparkAnswerAndNative(q, Nil)
        // Only the non-bucketed side is shuffled, natively: a wrong hash would miss matches.
        assert(nativeShuffles(df).size == 1, df.queryExecution.executedPlan)
        assert(exchanges(df).size == 1, df.queryExecution.executedPlan)
        assert(df.count() > 0)
      }
    }
  }

  test("aggregates, joins, sorts and windows over native shuffles give Spark's rows, ANSI on and off") {
    bothAnsiModes { _ =>
      for (k <- keyColumns)
        checkNativeShuffle(data.groupBy(k).agg(count(lit(1)), sum("i32"), min(abs(col("f64"))), max("s")))
      checkNativeShuffle(data.groupBy("i16", "dt").agg(avg("dec"), count("ts")))
      checkNativeShuffle(data.agg(count(lit(1)), sum("i32"), max("dec38")))
      withSQLConf("spark.sql.autoBroadcastJoinThreshold" -> "-1") {
        val l = data.select(col("i16").as("k"), col("s").as("ls"), col("id").as("lid"))
        val r = data.where(col("id") % 3 === 0).select(col("i16").as("k"), col("f64").as("rf"))
        for (jt <- Seq("inner", "left_outer", "full_outer", "left_anti"))
          checkNativeShuffle(l.join(r, Seq("k"), jt))
      }
      // Partition by partition, each sorted: the same order only if every row went where Spark sent it.
      checkNativeShuffle(data.repartition(3, col("s")).sortWithinPartitions("s", "id"), ordered = true)
      checkNativeShuffle(
        data.select(
          col("i8"),
          col("id"),
          sum("i32").over(
            org.apache.spark.sql.expressions.Window
              .partitionBy("i8")
              .orderBy("id")
              .rowsBetween(-3, 0)
          )
        )
      )
    }
  }

  test("a Spark operator above a native shuffle reads its rows") {
    withSQLConf("spark.ember.exec.aggregate.enabled" -> "false") {
      for (aqe <- Seq("true", "false")) withSQLConf("spark.sql.adaptive.enabled" -> aqe) {
        val df = checkNativeShuffle(data.groupBy("s", "i8").agg(count(lit(1)), sum("i16")))
        assert(!nativeNodes(df).exists(_.isInstanceOf[EmberAggregateExec]))
        assert(executedNodes(df).exists(_.isInstanceOf[HashAggregateExec]), df.queryExecution.executedPlan)
      }
    }
  }

  test("AQE: coalesced partitions, skew splits and local shuffle reads") {
    withSQLConf(
      "spark.sql.shuffle.partitions" -> "50",
      "spark.sql.adaptive.coalescePartitions.enabled" -> "true"
    ) {
      val df = checkNativeShuffle(data.groupBy("i32").agg(count(lit(1)), sum("f64")))
      assert(
        executedNodes(df).exists { case r: AQEShuffleReadExec => r.hasCoalescedPartition; case _ => false },
        df.queryExecution.executedPlan
      )
    }
    withSQLConf(
      "spark.sql.autoBroadcastJoinThreshold" -> "-1",
      "spark.sql.adaptive.skewJoin.enabled" -> "true",
      "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes" -> "1k",
      "spark.sql.adaptive.skewJoin.skewedPartitionFactor" -> "1",
      "spark.sql.adaptive.advisoryPartitionSizeInBytes" -> "1k",
      "spark.sql.adaptive.coalescePartitions.enabled" -> "false"
    ) {
      // 80% of the left rows on one key: AQE splits that partition by map ranges.
      val skewed = data.select(when(col("id") % 5 =!= 0, lit(1)).otherwise(col("i32")).as("k"), col("id"))
      val other = data.select(col("i32").as("k"), col("s"))
      val df = checkNativeShuffle(skewed.join(other, "k"))
      assert(
        executedNodes(df).exists { case r: AQEShuffleReadExec => r.hasSkewedPartition; case _ => false },
        df.queryExecution.executedPlan
      )
    }
    withSQLConf(
      "spark.sql.autoBroadcastJoinThreshold" -> "10MB",
      "spark.sql.adaptive.localShuffleReader.enabled" -> "true"
    ) {
      // Statically a sort-merge join (the filter's selectivity is unknown); at run time the small side is
      // broadcast and the big side's shuffle is read locally.
      val small = data.where(col("id") < 20).groupBy("i16").agg(count(lit(1)).as("c"))
      val big = data.select(col("i16"), col("s"))
      val df = checkSparkAnswerAndNative(big.join(small, "i16"), Nil)
      assert(nativeShuffles(df).nonEmpty, df.queryExecution.executedPlan)
      if (executedNodes(df).exists(_.isInstanceOf[BroadcastHashJoinExec]))
        assert(
          executedNodes(df).exists { case r: AQEShuffleReadExec => r.isLocalRead; case _ => false },
          df.queryExecution.executedPlan
        )
    }
  }

  test("empty inputs, empty partitions, spills and several blocks per partition") {
    // Without AQE, which would drop the exchanges of an empty side altogether.
    withSQLConf("spark.sql.adaptive.enabled" -> "false") {
      checkNativeShuffle(data.where(col("id") < 0).groupBy("s").agg(count(lit(1))))
      checkNativeShuffle(data.where(col("id") < 0).agg(count(lit(1)), sum("i16")))
    }
    withSQLConf("spark.ember.shuffle.spillBytes" -> "4096", "spark.ember.batchSize" -> "100") {
      val df = checkNativeShuffle(data.repartition(7, col("i16")).select("id", "i16", "bin"))
      val shuffle = nativeShuffles(df).head
      assert(
        shuffle.metrics("blocks_written").value > 4 * 7,
        "expected many blocks with a 4 KiB spill threshold"
      )
      assert(shuffle.metrics("spillCount").value > 4, "expected the writer to spill at 4 KiB")
      assert(shuffle.metrics("shuffle_rows").value == 3000)
      checkNativeShuffle(data.groupBy("i16").agg(count(lit(1)), max("bin")))
    }
  }

  test("a map task writes one data file, partition after partition, deleted with the shuffle") {
    // Tests clean every query's shuffle files at its end: kept here, so that they can be seen.
    withSQLConf("spark.sql.classic.shuffleDependency.fileCleanup.enabled" -> "false") {
      // 200 partitions: Spark's own writer would open 200 temporary files per map task here.
      checkNativeShuffle(data.repartition(200, col("i32")).select("id", "i32", "s"))
      val env = org.apache.spark.SparkEnv.get
      val tracker = env.mapOutputTracker.asInstanceOf[org.apache.spark.MapOutputTrackerMaster]
      val before = tracker.shuffleStatuses.keys.toSet
      val df = data.repartition(200, col("i32")).select("id", "i32", "s")
      assert(df.collect().length == 3000)
      assert(nativeShuffles(df).nonEmpty)
      val Seq(shuffleId) = (tracker.shuffleStatuses.keys.toSet -- before).toSeq
      val maps = tracker.shuffleStatuses(shuffleId).mapStatuses.length
      def files(kind: String) = env.blockManager.diskBlockManager
        .getAllFiles()
        .map(_.getName)
        .filter(n => n.startsWith(s"shuffle_${shuffleId}_") && n.endsWith(kind))
      // One index per map task, one data file per map task that had rows (as Spark's writers leave them).
      assert(files(".index").length == maps, files("").sorted)
      assert(files(".data").nonEmpty && files(".data").length <= maps, files("").sorted)
      env.shuffleManager.unregisterShuffle(shuffleId)
      assert(files("").isEmpty, s"left after the shuffle was unregistered: ${files("")}")
    }
  }

  test("round-robin exchanges stay in Spark, with the reason; range exchanges are native") {
    withEmber(enabled = true) {
      val rr = data.repartition(5)
      rr.collect()
      val reasons = executedNodes(rr).collect { case s: ShuffleExchangeExec =>
        EmberExecRule.fallbackReasons(s)
      }
      assert(reasons.flatten.exists(_.contains("RoundRobinPartitioning")), reasons)
      val range = data.repartitionByRange(5, col("i32"))
      range.collect()
      assert(executedNodes(range).exists {
        case e: EmberShuffleExchangeExec => e.outputPartitioning.isInstanceOf[RangePartitioning]
        case _ => false
      })
    }
    checkSparkAnswerAndNative(data.repartitionByRange(5, col("i32")).select("id", "i32"), Nil)
    checkSparkAnswerAndNative(data.repartition(5).select("id", "s"), Nil)
    // A limit's single-partition exchange of rows without columns: Arrow IPC cannot carry it, Spark's can.
    def noColumns = spark.range(0, 100, 1, 3).selectExpr().where(lit(true)).limit(7).groupBy().count()
    checkSparkAnswerAndNative(noColumns, Nil)
    withEmber(enabled = true) {
      val df = noColumns
      df.collect()
      val reasons = executedNodes(df).collect { case s: ShuffleExchangeExec =>
        EmberExecRule.fallbackReasons(s)
      }
      assert(reasons.flatten.exists(_.contains("without columns")), reasons)
    }
  }

  test("switched off: Spark's exchange") {
    withSQLConf("spark.ember.exec.shuffle.enabled" -> "false") {
      withEmber(enabled = true) {
        val df = data.groupBy("s").agg(count(lit(1)))
        df.collect()
        assert(nativeShuffles(df).isEmpty && exchanges(df).nonEmpty)
      }
    }
  }
}
