package org.apache.spark.sql.ondemand

import java.io.File

import org.apache.spark.{SparkConf, SparkFunSuite}
import org.apache.spark.sql.classic.{DataFrame, SparkSession}
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.functions._

/**
 * On demand (`make test-local-cluster`): Ember on Spark's `local-cluster[2,1,1024]`, where the executors are JVMs
 * of their own (launched by in-process workers from a Spark home: the pyspark package in dev/.venv, which has
 * Spark's jars), with Ember's classes and native library on their class path only through
 * `spark.executor.extraClassPath`. A query with a native shuffle and a native join returns Spark's rows; so does
 * a native broadcast join, whose hash table each executor builds once for all its tasks.
 */
class EmberLocalClusterSuite extends SparkFunSuite with AdaptiveSparkPlanHelper {

  // The workers launch executors from $SPARK_HOME (make test-local-cluster sets it to dev/.venv's pyspark).
  private def sparkHome: File = {
    val home = new File(
      sys.env.getOrElse("SPARK_HOME", fail("SPARK_HOME is not set: run make test-local-cluster"))
    )
    assert(new File(home, "jars").isDirectory, s"$home has no jars/: not a Spark home")
    home
  }

  /**
   * Ember on the executors: what its jar bundles, as this JVM has it (its classes and native library in
   * target/classes, protobuf-java and arrow-c-data). Not the jar itself: the jar relocates protobuf, and a task's
   * closures serialized by this driver (unrelocated classes) would not deserialize against it.
   */
  private def emberClassPath: String = {
    val entries = sys.props("java.class.path").split(File.pathSeparator).toSeq
    val ember = entries.filter(e =>
      e.endsWith("target/classes") || e.contains("/protobuf-java-") || e.contains("/arrow-c-data-")
    )
    assert(ember.size == 3, s"Ember's classes, protobuf-java and arrow-c-data on the class path: $ember")
    assert(new File(ember.head, "org/ember/native").isDirectory, s"no native library in ${ember.head}")
    ember.mkString(File.pathSeparator)
  }

  test("a native shuffle and join on executors in their own JVMs return Spark's rows") {
    sparkHome
    // Without spark.testing, as in a deployment: the workers take the Spark home from SPARK_HOME (not
    // spark.test.home) and the executors' class path is Spark's jars and spark.executor.extraClassPath only (not
    // this JVM's class path, which Spark's scheduler adds in tests).
    val testing = sys.props.remove("spark.testing")
    val conf = new SparkConf()
      .set("spark.plugins", "org.ember.EmberPlugin")
      .set("spark.executor.extraClassPath", emberClassPath)
      // What bin/load-spark-env.sh exports for Spark's launcher where a worker runs from the scripts.
      .set("spark.executorEnv.SPARK_SCALA_VERSION", "2.13")
      .set("spark.memory.offHeap.enabled", "true")
      .set("spark.memory.offHeap.size", "256m")
      .set("spark.executor.memory", "512m")
      .set("spark.sql.shuffle.partitions", "4")
      .set("spark.sql.autoBroadcastJoinThreshold", "-1")
      .set("spark.sql.adaptive.autoBroadcastJoinThreshold", "-1")
      .set("spark.ui.enabled", "false")
    val spark =
      try
        SparkSession
          .builder()
          .master("local-cluster[2,1,1024]")
          .appName("ember-local-cluster")
          .config(conf)
          .getOrCreate()
      finally testing.foreach(sys.props("spark.testing") = _)
    try {
      def query: DataFrame = {
        val left = spark
          .range(0, 200000, 1, 4)
          .select(
            (col("id") % 5000).as("k"),
            col("id").as("v"),
            when(col("id") % 7 === 0, lit(null))
              .otherwise(concat(lit("ü-"), col("id").cast("string")))
              .as("s")
          )
        val right =
          spark.range(0, 20000, 1, 3).select((col("id") * 3 % 6000).as("rk"), (col("id") - 10000).as("w"))
        left
          .join(right.hint("shuffle_hash"), col("k") === col("rk"))
          .groupBy(col("k") % 97)
          .agg(count(lit(1)), sum("v"), sum("w"), max("s"), min("s"), count("s"))
      }
      def rows(df: DataFrame): Seq[String] = df.collect().toSeq.map(_.toSeq.mkString("|")).sorted
      spark.conf.set("spark.ember.enabled", "false")
      val expected = rows(query)
      spark.conf.set("spark.ember.enabled", "true")
      val df = query
      val actual = rows(df)
      val plan = df.queryExecution.executedPlan
      val natives = collectWithSubqueries(plan) {
        case e: EmberExec => e
        case e: EmberShuffleExchangeExec => e
      }
      assert(natives.exists(_.isInstanceOf[EmberShuffleExchangeExec]), plan)
      assert(natives.exists(_.isInstanceOf[EmberSpillingHashJoinExec]), plan)
      assert(expected.size == 97)
      assert(actual == expected)
      // Two executors besides the driver ran the tasks (a closure of this suite's would not even load there:
      // the executors have only Spark's jars and Ember's).
      assert(spark.sparkContext.statusTracker.getExecutorInfos.length == 3)

      // A broadcast join probed by 16 tasks on the two executors: one table per executor, not one per task.
      def broadcastQuery: DataFrame = {
        val dim = spark
          .range(0, 30000, 1, 2)
          .select(col("id").as("dk"), concat(lit("d-"), col("id").cast("string")).as("ds"))
        spark
          .range(0, 400000, 1, 16)
          .select((col("id") * 7 % 40000).as("fk"), col("id").as("fv"))
          .join(broadcast(dim), col("fk") === col("dk"))
          .groupBy(col("fk") % 13)
          .agg(count(lit(1)), sum("fv"), max("ds"))
      }
      spark.conf.set("spark.ember.enabled", "false")
      val expectedBroadcast = rows(broadcastQuery)
      spark.conf.set("spark.ember.enabled", "true")
      val bdf = broadcastQuery
      assert(rows(bdf) == expectedBroadcast)
      val joins = collectWithSubqueries(bdf.queryExecution.executedPlan) {
        case j: EmberBroadcastHashJoinExec => j
      }
      assert(joins.size == 1, bdf.queryExecution.executedPlan)
      val built = joins.head.metrics("build_rows").value
      assert(built >= 30000 && built <= 2 * 30000, s"$built build rows: not one table per executor")
    } finally {
      spark.stop()
      SparkSession.clearActiveSession()
      SparkSession.clearDefaultSession()
    }
  }
}
