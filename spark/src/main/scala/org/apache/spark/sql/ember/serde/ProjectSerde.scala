package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.execution._
import org.ember.EmberConf
import org.ember.proto

/** Converts `ProjectExec` to the proto `Projection`. */
object ProjectSerde extends OperatorSerde[ProjectExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_PROJECT
  override def convert(plan: ProjectExec): Either[String, proto.Operator] =
    for {
      _ <- checkSchema(plan.child.output)
      _ <- checkSchema(plan.output)
      exprs <- ExprSerde.withJvmExpressions(ExprSerde.convertAll(plan.projectList, plan.child.output))
    } yield {
      val b = proto.Projection.newBuilder()
      exprs.zip(plan.projectList).foreach { case (e, ne) =>
        b.addExprs(e)
        b.addNames(TypeSerde.name(ne.name))
      }
      op(_.setProjection(b))
    }
}
