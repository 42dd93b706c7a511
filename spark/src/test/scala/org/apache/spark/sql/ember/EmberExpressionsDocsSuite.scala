package org.apache.spark.sql.ember

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.ember.serde.{ExpressionsDoc, FunctionSerde}

/** docs/expressions.md is generated from the converter's registries; `make docs` rewrites it. */
class EmberExpressionsDocsSuite extends AnyFunSuite {
  private val path = Paths.get(sys.props.getOrElse("ember.expressionsDoc", "../docs/expressions.md"))

  test("docs/expressions.md matches the converter's registries") {
    val text = ExpressionsDoc.markdown
    if (sys.props.get("ember.writeDocs").contains("true")) {
      Files.write(path, text.getBytes(StandardCharsets.UTF_8))
    }
    val onDisk = new String(Files.readAllBytes(path), StandardCharsets.UTF_8)
    assert(onDisk == text, "docs/expressions.md is stale: run `make docs`")
  }

  test("every native function class is one of Spark's built-in functions") {
    val text = ExpressionsDoc.markdown
    (FunctionSerde.registry.keys.toSet -- FunctionSerde.operators).foreach { c =>
      val name = c.getSimpleName
      assert(
        text.contains(s"| $name | native |") || text.contains(s"| ${name}ExpressionBuilder | native |") ||
          ExpressionsDoc.builders.exists { case (b, c) => c == name && text.contains(s"| $b | native |") },
        name
      )
    }
  }
}
