package org.apache.spark.sql.ember

import org.apache.spark.sql.catalyst.plans.physical.UnknownPartitioning
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.execution._
import org.ember.EmberConf

/**
 * After Spark inserted its transitions: an [[EmberInputExec]] reads rows itself (through Spark's Arrow
 * writer), so a `RowToColumnarExec` Spark put under it is removed; a `ColumnarToRowExec` over a native block
 * becomes [[EmberColumnarToRowExec]] (rows written natively); one over a broadcast goes.
 */
object EmberTransitionCleanup extends Rule[SparkPlan] {
  override def apply(plan: SparkPlan): SparkPlan = {
    val nativeRows = EmberConf.NATIVE_COLUMNAR_TO_ROW.get(plan.conf)
    def toRows(child: SparkPlan): SparkPlan = child match {
      case native: EmberExec if nativeRows => EmberColumnarToRowExec(native)
      case other => ColumnarToRowExec(other)
    }
    plan.transformUp {
      case in @ EmberInputExec(r: RowToColumnarExec) => in.copy(child = r.child)
      // Spark 4.1's UnionExec keeps the partitioning it reports (partition i of every child → partition i) only
      // on its row path (SQLPartitioningAwareUnionRDD); its columnar path concatenates partitions, so a parent
      // that relied on the reported partitioning (an aggregate or join without a shuffle) would be wrong. Run
      // such a union on rows.
      case ColumnarToRowExec(u: UnionExec) if !u.outputPartitioning.isInstanceOf[UnknownPartitioning] =>
        u.withNewChildren(u.children.map(toRows))
      // The same union read by a native block (a native aggregate without an exchange under it).
      case in @ EmberInputExec(u: UnionExec)
          if u.supportsColumnar && !u.outputPartitioning.isInstanceOf[UnknownPartitioning] =>
        in.copy(child = u.withNewChildren(u.children.map(toRows)))
      // A broadcast is read through executeBroadcast, never as rows: Ember's says it is columnar (so that its
      // native child stays columnar), which made Spark put a ColumnarToRow above it where a plan's root must be
      // the broadcast itself — the broadcast a dynamic partition pruning subquery reuses (AdaptiveSparkPlanExec
      // asserts its final plan is a BroadcastQueryStageExec).
      case ColumnarToRowExec(b) if EmberBroadcastExchangeExec.of(b).isDefined => b
      case ColumnarToRowExec(native: EmberExec) if nativeRows => toRows(native)
    }
  }
}
