package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.catalyst.expressions.{Attribute, NamedExpression}
import org.apache.spark.sql.execution._
import org.ember.EmberConf
import org.ember.proto

/** Converts `ProjectExec` to the proto `Projection`. */
object ProjectSerde extends OperatorSerde[ProjectExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_PROJECT
  override def convert(plan: ProjectExec): Either[String, proto.Operator] =
    ExprSerde.withJvmExpressions(projection(plan.projectList, plan.child.output))

  /** `projectList` over `input` as a `Projection`: both schemas checked, the expressions converted. */
  def projection(projectList: Seq[NamedExpression], input: Seq[Attribute]): Either[String, proto.Operator] =
    for {
      _ <- checkSchema(input)
      _ <- checkSchema(projectList.map(_.toAttribute))
      exprs <- ExprSerde.convertAll(projectList, input)
    } yield {
      val b = proto.Projection.newBuilder()
      exprs.zip(projectList).foreach { case (e, ne) =>
        b.addExprs(e)
        b.addNames(TypeSerde.name(ne.name))
      }
      op(_.setProjection(b))
    }
}
