package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.catalyst.expressions.EvalMode
import org.apache.spark.sql.types._
import org.ember.proto

/**
 * Which casts run natively, asked of the engine one cast at a time so that the reason names the cast: a
 * projection of the cast over one input column of the source type goes through the engine's one support call
 * (`EngineSupport.ask`; `cast::supported` and the JDK rule in the planner decide), so the JVM never keeps a
 * second copy of the engine's support matrix. The operator holding the cast is asked again as a whole.
 */
object CastSupport {

  def check(from: DataType, to: DataType, mode: EvalMode.Value, timeZoneId: String): Either[String, Unit] =
    for {
      f <- TypeSerde.convert(from, timeZoneId)
      t <- TypeSerde.convert(to, timeZoneId)
      column = proto.Expr
        .newBuilder()
        .setColumn(proto.ColumnRef.newBuilder().setIndex(0).setType(f).setNullable(true))
      cast = proto.Expr
        .newBuilder()
        .setCast(
          proto.Cast
            .newBuilder()
            .setChild(column)
            .setTo(t)
            .setEvalMode(ExprSerde.evalMode(mode))
            .setTimezone(timeZoneId)
        )
      input = proto.Operator
        .newBuilder()
        .setInput(
          proto.Input
            .newBuilder()
            .setSchema(
              proto.Schema
                .newBuilder()
                .addFields(proto.Field.newBuilder().setName("c0").setType(f).setNullable(true))
            )
        )
      _ <- EngineSupport.ask(
        proto.Operator
          .newBuilder()
          .setProjection(proto.Projection.newBuilder().addExprs(cast).addNames("c0"))
          .addChildren(input)
          .build()
      )
    } yield ()
}
