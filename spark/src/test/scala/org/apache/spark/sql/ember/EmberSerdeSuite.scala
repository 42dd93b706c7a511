package org.apache.spark.sql.ember

import org.apache.spark.sql.catalyst.expressions.{Alias, AttributeReference, Literal}
import org.apache.spark.sql.ember.serde.{ProjectSerde, TypeSerde}
import org.apache.spark.sql.execution.{LocalTableScanExec, ProjectExec}
import org.apache.spark.sql.types.IntegerType
import org.scalatest.funsuite.AnyFunSuite

/** Serde corner cases that need no session. */
class EmberSerdeSuite extends AnyFunSuite {

  test("attributes with a null name (legal in Spark plans) serialize; the engine binds by position") {
    val nameless = AttributeReference(null, IntegerType)()
    val schema = TypeSerde.schema(Seq(nameless), "UTC")
    assert(schema.isRight, schema)
    assert(schema.toOption.get.getFields(0).getName == "")

    val project =
      ProjectExec(Seq(Alias(Literal(1), null)(), nameless), LocalTableScanExec(Seq(nameless), Nil, None))
    val op = ProjectSerde.convert(project)
    assert(op.isRight, op)
    assert(op.toOption.get.getProjection.getNamesList.size == 2)
  }
}
