package org.apache.spark.sql.ember.execution

import java.util.concurrent.atomic.AtomicLong

import scala.concurrent.Promise
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, SortOrder}
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.apache.spark.util.CollectionAccumulator
import org.ember.jni.NativeLib
import org.ember.proto

/**
 * One cross-stage dynamic filter: a shuffled join's build side ([[DynamicFilterRole.Build]]) summarizes its keys
 * per reduce partition in its map tasks; the driver unites the summaries when that map stage completes
 * (`result`); the probe side's map stage ([[DynamicFilterRole.Probe]]) waits for it, and its scan and shuffle
 * writer drop what cannot match. Equal by `id` only (it is part of both exchanges' canonical forms, so neither is
 * ever reused for another consumer).
 */
case class DynamicFilterLink(id: Long) {

  /** Set when an Ember exchange will summarize the build side: only then does the probe side wait. */
  @transient @volatile var buildPlanned: Boolean = false

  /** The build side's summaries united, or None: filter nothing. */
  @transient lazy val result: Promise[Option[proto.DynamicFilterUnion]] = Promise()

  override def toString: String = s"#$id"
}

object DynamicFilterLink {
  private val ids = new AtomicLong()
  def next(): DynamicFilterLink = DynamicFilterLink(ids.incrementAndGet())
}

sealed trait DynamicFilterRole { def link: DynamicFilterLink }

object DynamicFilterRole {
  final case class Build(link: DynamicFilterLink) extends DynamicFilterRole {
    override def toString: String = s"builds dynamic filter $link"
  }
  final case class Probe(link: DynamicFilterLink) extends DynamicFilterRole {
    override def toString: String = s"probed by dynamic filter $link"
  }
}

/**
 * Where a dynamic filter attaches: put directly under a join side's `ShuffleExchangeExec` by
 * [[org.apache.spark.sql.ember.DynamicFilterPlanner]] before stages are created, so that the exchange's canonical
 * form is its own. Ember's exchange conversion takes it in (the writer summarizes or filters); if the exchange stays
 * Spark's, the node passes its child's rows or batches through unchanged.
 */
case class EmberDynamicFilterExec(role: DynamicFilterRole, child: SparkPlan) extends UnaryExecNode {
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering
  override def supportsColumnar: Boolean = child.supportsColumnar
  override protected def doExecute(): RDD[InternalRow] = child.execute()
  override protected def doExecuteColumnar(): RDD[ColumnarBatch] = child.executeColumnar()
  override def simpleString(maxFields: Int): String = s"EmberDynamicFilter $role"
  override protected def withNewChildInternal(newChild: SparkPlan): EmberDynamicFilterExec =
    copy(child = newChild)
}

/** The build side's summaries, collected from its map tasks and united on the driver. */
private[execution] object DynamicFilterSummaries extends Logging {

  /**
   * The union of `summaries` ((map index, proto DynamicFilter bytes; empty: that task has none)), or None unless
   * every one of `mappers` map tasks reported a summary.
   */
  def unite(
      summaries: CollectionAccumulator[(Int, Array[Byte])],
      mappers: Int
  ): Option[proto.DynamicFilterUnion] = {
    val byMap = summaries.value.asScala.groupBy(_._1).map { case (m, s) => m -> s.head._2 }
    if (mappers == 0 || byMap.size != mappers || byMap.values.exists(_.isEmpty)) None
    else
      try {
        val all = proto.DynamicFilterSummaries.newBuilder()
        byMap.values.foreach(bytes => all.addSummaries(proto.DynamicFilter.parseFrom(bytes)))
        Some(proto.DynamicFilterUnion.parseFrom(NativeLib.unionDynamicFilters(all.build().toByteArray)))
      } catch {
        case NonFatal(e) =>
          logWarning(
            s"Ember: a dynamic filter's summaries could not be united; the probe side is not filtered",
            e
          )
          None
      }
  }
}
