package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.ember.execution.EmberBlock
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.internal.SQLConf
import org.ember.jni.NativeLib
import org.ember.proto

/**
 * The engine decides what it supports: a serialized operator, over `Input` leaves with its children's schemas, is
 * planned by the engine on the driver (one JNI call, nothing executed) and its planning error, if any, is the
 * fallback reason. The serdes' own checks only phrase reasons early; whatever they let through that the engine
 * would reject falls back here, on the driver, never as a task failure on an executor.
 */
object EngineSupport {

  def check(plan: SparkPlan, op: proto.Operator): Either[String, Unit] = {
    if (!NativeLib.isAvailable) return Left("the native library is not available on the driver")
    val tz = SQLConf.get.sessionLocalTimeZone
    val leaves = plan.children.zipWithIndex.map { case (child, i) =>
      TypeSerde.schema(child.output, tz).map { schema =>
        proto.Operator
          .newBuilder()
          .setInput(proto.Input.newBuilder().setInputIndex(i).setSchema(schema))
          .build()
      }
    }
    leaves.collectFirst { case Left(reason) => reason } match {
      case Some(reason) => Left(reason)
      case None =>
        val withInputs = op.toBuilder.clearChildren()
        leaves.foreach(l => withInputs.addChildren(l.toOption.get))
        ask(withInputs.build()).left.map(r => s"the engine declines: $r")
    }
  }

  /**
   * The engine's answer for `op`, whose `Input` leaves carry its children's schemas, under the session's
   * `ExecConfig` (with the JVM's version): the planning error, if any.
   */
  def ask(op: proto.Operator): Either[String, Unit] =
    if (!NativeLib.isAvailable) Left("the native library is not available on the driver")
    else
      Option(NativeLib.planSupport(op.toByteArray, EmberBlock.execConfig(SQLConf.get).toByteArray)).toLeft(())
}
