package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.execution.ExpandExec
import org.ember.EmberConf
import org.ember.proto

/** Converts `ExpandExec` (grouping sets, ROLLUP, CUBE, several DISTINCT aggregates) to the proto `Expand`. */
object ExpandSerde extends OperatorSerde[ExpandExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_EXPAND
  override def convert(plan: ExpandExec): Either[String, proto.Operator] =
    for {
      _ <- checkSchema(plan.child.output)
      _ <- checkSchema(plan.output)
      projections <- plan.projections.foldLeft[Either[String, Seq[Seq[proto.Expr]]]](Right(Vector.empty)) {
        (acc, p) =>
          acc.flatMap(done =>
            ExprSerde.withJvmExpressions(ExprSerde.convertAll(p, plan.child.output)).map(done :+ _)
          )
      }
    } yield {
      val b = proto.Expand.newBuilder()
      projections.foreach { exprs =>
        val p = proto.ExpandProjection.newBuilder()
        exprs.foreach(p.addExprs)
        b.addProjections(p)
      }
      plan.output.foreach(a => b.addNames(TypeSerde.name(a.name)))
      op(_.setExpand(b))
    }
}
