package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.catalyst.expressions.{Expression, KnownFloatingPointNormalized}
import org.apache.spark.sql.catalyst.optimizer.{BuildLeft, BuildRight, BuildSide}
import org.apache.spark.sql.catalyst.plans._
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.joins.ShuffledHashJoinExec
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.ember.EmberConf
import org.ember.proto

/**
 * `ShuffledHashJoinExec` → the native spilling hash join (proto `HashJoin`).
 *
 * Keys: Spark has already rewritten `a <=> b` keys into non-nullable `coalesce(a, default)` / `isnull(a)` pairs
 * (`ExtractEquiJoinKeys`), so every key pair is sent with `null_safe = false`: a null key never matches, as in
 * Spark's `HashJoin` (which skips rows with any null key). Floating-point keys are native when Spark has
 * normalized them (`KnownFloatingPointNormalized(NormalizeNaNAndZero(k))`, its `NormalizeFloatingNumbers` rule):
 * the native side normalizes too (every NaN the canonical NaN, -0.0 → 0.0), and the join's key equality is
 * Arrow's total order, under which those are equal exactly when Spark's keys are. The condition is bound to
 * left ++ right, as the native operator expects, whatever the build side.
 */
object SpillingHashJoinSerde extends OperatorSerde[ShuffledHashJoinExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_SPILLING_HASH_JOIN

  override def convert(plan: ShuffledHashJoinExec): Either[String, proto.Operator] =
    hashJoin(
      plan.leftKeys,
      plan.rightKeys,
      plan.joinType,
      plan.buildSide,
      plan.condition,
      plan.left,
      plan.right
    )

  /**
   * Whether a join building `bs` never emits unmatched build rows: what a join whose build side is a broadcast
   * needs, since Spark emits those rows once over all tasks and one task cannot know them.
   */
  def buildSideNotPreserved(jt: JoinType, bs: BuildSide): Boolean = (jt, bs) match {
    case (_: InnerLike | RightOuter, BuildLeft) => true
    case (_: InnerLike | LeftOuter | LeftSemi | LeftAnti | _: ExistenceJoin, BuildRight) => true
    case _ => false
  }

  /**
   * Whether dropping the probe side's rows whose keys no build row has is exact: the probe side's unmatched rows
   * are never emitted (the engine's `prunes_probe`, in Spark's orientation).
   */
  def prunesProbe(jt: JoinType, bs: BuildSide): Boolean = (jt, bs) match {
    case (_: InnerLike | LeftSemi, _) => true
    case (LeftOuter | LeftAnti | _: ExistenceJoin, BuildLeft) => true
    case _ => false
  }

  def joinType(jt: JoinType): Either[String, proto.JoinType] = jt match {
    // A cross join is an inner join whose condition (if any) decides alone.
    case Inner | Cross => Right(proto.JoinType.JOIN_TYPE_INNER)
    case LeftOuter => Right(proto.JoinType.JOIN_TYPE_LEFT_OUTER)
    case RightOuter => Right(proto.JoinType.JOIN_TYPE_RIGHT_OUTER)
    case FullOuter => Right(proto.JoinType.JOIN_TYPE_FULL_OUTER)
    case LeftSemi => Right(proto.JoinType.JOIN_TYPE_LEFT_SEMI)
    case LeftAnti => Right(proto.JoinType.JOIN_TYPE_LEFT_ANTI)
    case _: ExistenceJoin => Right(proto.JoinType.JOIN_TYPE_LEFT_MARK)
    case other => Left(s"join type ${other.sql} has no native implementation")
  }

  /** Keys whose equality the native hash join decides exactly as Spark's `HashJoin` does. */
  private def nativeKey(k: Expression): Boolean = k.dataType match {
    case FloatType | DoubleType => k.isInstanceOf[KnownFloatingPointNormalized]
    case other => ExprSerde.orderable(other)
  }

  def hashJoin(
      leftKeys: Seq[Expression],
      rightKeys: Seq[Expression],
      jt: JoinType,
      buildSide: BuildSide,
      condition: Option[Expression],
      left: SparkPlan,
      right: SparkPlan,
      nestedLoop: Boolean = false
  ): Either[String, proto.Operator] = {
    val conf = SQLConf.get
    val badKey = leftKeys.zip(rightKeys).collectFirst {
      case (l, r) if l.dataType != r.dataType =>
        s"join keys of different types (${l.dataType.simpleString}, ${r.dataType.simpleString})"
      case (l, r) if !nativeKey(l) || !nativeKey(r) =>
        s"join key of type ${l.dataType.simpleString}" +
          (if (ExprSerde.orderable(l.dataType)) " not normalized by Spark" else "")
    }
    for {
      // No keys is the engine's nested-loop join (BroadcastNestedLoopJoinSerde), never a hash join's plan.
      _ <- if (leftKeys.isEmpty != nestedLoop) Left("a hash join without equi-join keys") else Right(())
      _ <- badKey.toLeft(())
      t <- joinType(jt)
      _ <- checkSchema(left.output)
      _ <- checkSchema(right.output)
      // Keys and the residual condition without a kernel are evaluated by Spark inside the native join.
      lk <- ExprSerde.withJvmExpressions(ExprSerde.convertAll(leftKeys, left.output))
      rk <- ExprSerde.withJvmExpressions(ExprSerde.convertAll(rightKeys, right.output))
      cond <- condition match {
        case Some(c) =>
          ExprSerde.withJvmExpressions(ExprSerde.convert(c, left.output ++ right.output)).map(Some(_))
        case None => Right(None)
      }
    } yield {
      val bits = EmberConf.SPILLING_HASH_JOIN_BUCKET_BITS.get(conf)
      val dynamicFilters = EmberConf.DYNAMIC_FILTER_ENABLED.get(conf) && !nestedLoop
      val inJoinFilter = dynamicFilters && EmberConf.DYNAMIC_FILTER_IN_JOIN.get(conf)
      val probeScans =
        dynamicFilters && EmberConf.DYNAMIC_FILTER_PROBE_SCANS.get(conf) && prunesProbe(jt, buildSide)
      val b = proto.SpillingHashJoin
        .newBuilder()
        .setJoinType(t)
        .setBuildSide(
          if (buildSide == BuildLeft) proto.BuildSide.BUILD_SIDE_LEFT else proto.BuildSide.BUILD_SIDE_RIGHT
        )
        .setMaxBuildBufferBytes(EmberConf.SPILLING_HASH_JOIN_MAX_BUILD_BUFFER.get(conf).max(0L))
        .setBucketBits(bits.max(1L).min(16L).toInt)
        .setSpillDisabled(!EmberConf.SPILLING_HASH_JOIN_SPILL.get(conf))
        .setDynamicFilterEnabled(inJoinFilter)
        .setPruneProbeScans(probeScans)
        .setDynamicFilterMaxSetValues(
          EmberConf.DYNAMIC_FILTER_MAX_SET_VALUES.get(conf).max(0L).min(Int.MaxValue).toInt
        )
        .setDynamicFilterBloomBytes(EmberConf.DYNAMIC_FILTER_BLOOM_BYTES.get(conf).max(32L))
        .setDynamicFilterSampleRows(EmberConf.DYNAMIC_FILTER_SAMPLE_ROWS.get(conf).max(1L))
        .setDynamicFilterMinPrunedFraction(EmberConf.DYNAMIC_FILTER_IN_JOIN_MIN_PRUNED_FRACTION.get(conf))
      lk.foreach(b.addLeftKeys)
      rk.foreach(b.addRightKeys)
      leftKeys.foreach(_ => b.addNullSafe(false))
      cond.foreach(b.setCondition)
      op(_.setSpillingHashJoin(b))
    }
  }
}
