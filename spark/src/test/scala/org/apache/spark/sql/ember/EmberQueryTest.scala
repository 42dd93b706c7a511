package org.apache.spark.sql.ember

import java.util.Locale

import scala.jdk.CollectionConverters._
import scala.reflect.ClassTag

import org.apache.spark.{SparkConf, SparkThrowable}
import org.apache.spark.sql.{QueryTest, Row}
import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.ember.memory.NativeMemoryConsumer
import org.apache.spark.sql.execution.{
  joins,
  ExpandExec,
  FilterExec,
  GlobalLimitExec,
  LocalLimitExec,
  ProjectExec,
  SortExec,
  SparkPlan,
  TakeOrderedAndProjectExec
}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.execution.window.WindowExec
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StringType
import org.apache.spark.sql.test.SharedSparkSession
import org.ember.jni.NativeLib
import org.ember.proto

/**
 * Test base: every check runs the query with Ember off (Spark's answer) and on, compares the rows exactly
 * (doubles by bit pattern, -0.0 ≠ 0.0; any NaN equals any NaN), asserts that the executed plan contains the
 * expected native operators, and that no native memory is still reserved afterwards.
 */
abstract class EmberQueryTest extends QueryTest with SharedSparkSession with AdaptiveSparkPlanHelper {

  protected def offHeapSize: String = "256m"

  override protected def sparkConf: SparkConf = super.sparkConf
    .set("spark.plugins", "org.ember.EmberPlugin")
    .set("spark.memory.offHeap.enabled", "true")
    .set("spark.memory.offHeap.size", offHeapSize)
    .set("spark.ember.enabled", "true")
    .set("spark.ember.sort.spillReservationBytes", (2L << 20).toString)
    .set("spark.sql.shuffle.partitions", "4")
    .set("spark.ui.enabled", "false")
    // Off, so that a kernel the engine refuses shows as a fallback instead of passing through Spark's own code;
    // EmberJvmExpressionsSuite and the tests of that path turn it on.
    .set("spark.ember.expression.jvm.enabled", "false")

  /** Every node of the executed plan, through adaptive query stages and subqueries. */
  protected def executedNodes(df: DataFrame): Seq[SparkPlan] =
    collectWithSubqueries(df.queryExecution.executedPlan) { case p => p }

  protected def nativeNodes(df: DataFrame): Seq[EmberExec] =
    executedNodes(df).collect { case e: EmberExec => e }

  /** Rows in a form where equality is exact. */
  protected def exact(rows: Seq[Row]): Seq[Seq[Any]] = rows.map(_.toSeq.map(exactValue))

  private def exactValue(v: Any): Any = v match {
    case d: Double => if (d.isNaN) "NaN" else ("d", java.lang.Double.doubleToRawLongBits(d))
    case f: Float => if (f.isNaN) "NaN" else ("f", java.lang.Float.floatToRawIntBits(f))
    case b: Array[Byte] => b.toSeq
    case d: java.math.BigDecimal => ("dec", d.unscaledValue(), d.scale())
    case r: Row => r.toSeq.map(exactValue)
    case other => other
  }

  protected def withEmber[T](enabled: Boolean)(f: => T): T =
    withSQLConf("spark.ember.enabled" -> enabled.toString)(f)

  /**
   * No native memory reserved and no Arrow buffer leaked. A query can return while tasks it no longer needs are
   * still being killed (adaptive execution cancels the other side's stage once one join side turns out empty;
   * a failed job does not wait for its running tasks): those release their plans when they end, so this waits
   * up to 60 s for them, and a leak still fails.
   */
  protected def assertNoNativeMemoryHeld(): Unit =
    org.scalatest.concurrent.Eventually.eventually(
      org.scalatest.concurrent.PatienceConfiguration
        .Timeout(org.scalatest.time.Span(60, org.scalatest.time.Seconds))
    ) {
      assert(NativeMemoryConsumer.outstanding.get() == 0, "native memory still reserved after the query")
      assert(NativePlanIterator.arrowLeaks.get() == 0, "Arrow buffers leaked by a native plan (see the log)")
    }

  /**
   * Runs `query` with Ember off and on; the rows must be identical (in order when `ordered`), and the plan with
   * Ember on must contain every class in `expectedNative`.
   */
  protected def checkSparkAnswerAndNative(
      query: => DataFrame,
      expectedNative: Seq[Class[_ <: EmberExec]],
      ordered: Boolean = false
  ): DataFrame = {
    var sparkPlan: Seq[SparkPlan] = Nil
    var sparkDf: DataFrame = null
    val expected = withEmber(enabled = false) {
      val df = query
      sparkDf = df
      val rows = df.collect().toSeq
      assert(nativeNodes(df).isEmpty, "Ember off must not plan native operators")
      sparkPlan = executedNodes(df)
      rows
    }
    withEmber(enabled = true) {
      val df = query
      // A DataFrame keeps the plan of its first execution: the same object twice would compare Spark with itself.
      assert(!(df eq sparkDf), "the query must build a new DataFrame per call (pass it by name, not a val)")
      val actual = df.collect().toSeq
      val natives = nativeNodes(df)
      expectedNative.filter(c => sparkHad(c, sparkPlan)).foreach { cls =>
        assert(
          natives.exists(n => cls.isInstance(n)),
          s"expected ${cls.getSimpleName} in the executed plan:\n${df.queryExecution.executedPlan}\n" +
            s"fallbacks: ${EmberExplainInfo.fallbackLines(df.queryExecution.executedPlan).mkString("; ")}"
        )
      }
      val (e, a) =
        if (ordered) (exact(expected), exact(actual))
        else (exact(expected).sortBy(_.toString), exact(actual).sortBy(_.toString))
      if (e != a) {
        val firstDiff = e.zip(a).indexWhere { case (x, y) => x != y }
        fail(
          s"Ember's answer differs from Spark's (${e.size} vs ${a.size} rows; first difference at $firstDiff: " +
            s"${e.lift(firstDiff)} vs ${a.lift(firstDiff)})\n${df.queryExecution.executedPlan}"
        )
      }
      assertNoNativeMemoryHeld()
      assertMetricNamesNative(natives)
      df
    }
  }

  /**
   * Every metric a native node shows under its native operator's own name is one the engine declares for that
   * operator's proto kind (`NativeLib.metricNames`, from each Rust operator's `metric_names`): a name that
   * drifted on either side would silently show 0.
   */
  protected def assertMetricNamesNative(nodes: Seq[EmberExec]): Unit =
    nodes.filter(_.nativeMetricNames.nonEmpty).foreach { n =>
      assertNamesDeclared(n.nativeOperator.getKindCase, n.nativeMetricNames, n.nodeName)
    }

  protected def assertNamesDeclared(kind: proto.Operator.KindCase, names: Set[String], node: String): Unit = {
    val declared = EmberQueryTest.engineMetricNames.getOrElse(kind.name.toLowerCase(Locale.ROOT), Set.empty)
    val unknown = names -- declared
    assert(
      unknown.isEmpty,
      s"$node shows metrics ${unknown.mkString(", ")} that the engine's $kind operator does not declare " +
        s"(it declares ${declared.mkString(", ")})"
    )
  }

  /** The Spark operator each native one replaces. */
  private val replaces: Map[Class[_], Class[_]] = Map(
    classOf[EmberFilterExec] -> classOf[FilterExec],
    classOf[EmberProjectExec] -> classOf[ProjectExec],
    classOf[EmberExpandExec] -> classOf[ExpandExec],
    classOf[EmberSortExec] -> classOf[SortExec],
    classOf[EmberLocalLimitExec] -> classOf[LocalLimitExec],
    classOf[EmberGlobalLimitExec] -> classOf[GlobalLimitExec],
    classOf[EmberPrefixWindowExec] -> classOf[WindowExec],
    classOf[EmberAggregateExec] -> classOf[BaseAggregateExec],
    classOf[EmberSpillingHashJoinExec] -> classOf[joins.ShuffledHashJoinExec],
    classOf[EmberBroadcastHashJoinExec] -> classOf[joins.BroadcastHashJoinExec],
    classOf[EmberBroadcastNestedLoopJoinExec] -> classOf[joins.BroadcastNestedLoopJoinExec],
    classOf[EmberTakeOrderedAndProjectExec] -> classOf[TakeOrderedAndProjectExec]
  )

  /**
   * Whether Spark's own plan had the operator a native one replaces: a query the optimizer reduces to an empty
   * relation has nothing to run natively.
   */
  private def sparkHad(native: Class[_], sparkPlan: Seq[SparkPlan]): Boolean =
    replaces.get(native).forall(spark => sparkPlan.exists(spark.isInstance(_)))

  private def sparkThrowableOf(t: Throwable): Option[Throwable with SparkThrowable] = {
    var cur = t
    while (cur != null) {
      cur match {
        case s: SparkThrowable if s.getCondition != null => return Some(s)
        case _ =>
      }
      cur = cur.getCause
    }
    None
  }

  private def errorClassOf(t: Throwable): Option[String] = sparkThrowableOf(t).map(_.getCondition)

  /** What a user sees of a query context: the fragment and where it is (SQL text or DataFrame call). */
  private def contextsOf(t: Throwable): Seq[String] =
    sparkThrowableOf(t).toSeq
      .flatMap(_.getQueryContext.toSeq)
      .map(c => s"${c.contextType} ${c.fragment}: ${c.summary}")

  /** Spark raises an error class with Ember off; Ember must raise the same one, from a native plan. */
  protected def checkSparkErrorAndNative(
      query: => DataFrame,
      expectedNative: Seq[Class[_ <: EmberExec]],
      exactParameters: Boolean = false
  ): String = {
    val sparkError = withEmber(enabled = false) { intercept[Throwable](query.collect()) }
    val sparkClass =
      errorClassOf(sparkError).getOrElse(fail(s"Spark's error has no error class: $sparkError"))
    withEmber(enabled = true) {
      val df = query
      val natives = nativeNodes(df)
      expectedNative.foreach(cls =>
        assert(
          natives.exists(cls.isInstance(_)),
          s"no ${cls.getSimpleName} in plan; fallbacks: " +
            EmberExplainInfo.fallbackLines(df.queryExecution.executedPlan).mkString("; ")
        )
      )
      val emberError = intercept[Throwable](df.collect())
      assert(
        errorClassOf(emberError).contains(sparkClass),
        s"Spark raised $sparkClass, Ember raised: $emberError"
      )
      // The same message parameters (their values name the failing row: with several partitions, the first
      // task to fail decides which) and the same query context (the SQL fragment / DataFrame function).
      def params(t: Throwable) = sparkThrowableOf(t).map(_.getMessageParameters.asScala.toMap)
      if (exactParameters) assert(params(emberError) == params(sparkError))
      else assert(params(emberError).map(_.keySet) == params(sparkError).map(_.keySet))
      assert(
        contextsOf(emberError) == contextsOf(sparkError),
        s"query context: Spark ${contextsOf(sparkError)}, Ember ${contextsOf(emberError)}"
      )
    }
    assertNoNativeMemoryHeld()
    sparkClass
  }

  /** The rows' values, strings as their bytes in hex (a Java String would replace invalid UTF-8), sorted. */
  protected def exactBytes(df: DataFrame): Seq[String] = {
    val types = df.schema.map(_.dataType)
    df.queryExecution.toRdd
      .map { r =>
        types.indices
          .map { i =>
            if (r.isNullAt(i)) "null"
            else if (types(i).isInstanceOf[StringType])
              r.getUTF8String(i).getBytes.map("%02x".format(_)).mkString
            else r.get(i, types(i)).toString
          }
          .mkString("|")
      }
      .collect()
      .toSeq
      .sorted
  }

  /** Runs `f` once with ANSI on and once with it off. */
  protected def bothAnsiModes(f: Boolean => Unit): Unit =
    Seq(true, false).foreach(ansi => withSQLConf(SQLConf.ANSI_ENABLED.key -> ansi.toString)(f(ansi)))

  protected def cls[T <: EmberExec](implicit t: ClassTag[T]): Class[T] = t.runtimeClass.asInstanceOf[Class[T]]
}

object EmberQueryTest {

  /** The engine's operator-specific metric names, by proto operator kind (field name). */
  lazy val engineMetricNames: Map[String, Set[String]] = {
    NativeLib.load()
    proto.MetricNames
      .parseFrom(NativeLib.metricNames())
      .getOperatorsList
      .asScala
      .map(o => o.getOperator -> o.getNamesList.asScala.toSet)
      .toMap
  }
}
