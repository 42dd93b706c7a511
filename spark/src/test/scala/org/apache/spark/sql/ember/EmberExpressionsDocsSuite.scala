package org.apache.spark.sql.ember

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}

import org.apache.spark.sql.ember.serde.{ExpressionsDoc, FunctionSerde}

/**
 * docs/expressions.md is generated from the converter's registries and, for functions Spark rewrites, from the
 * engine's answer on Spark's own examples of them; `make docs` rewrites it.
 */
class EmberExpressionsDocsSuite extends EmberQueryTest {
  private val path = Paths.get(sys.props.getOrElse("ember.expressionsDoc", "../docs/expressions.md"))
  private lazy val text = ExpressionsDoc.markdown(spark)

  test("docs/expressions.md matches the converter's registries") {
    if (sys.props.get("ember.writeDocs").contains("true")) {
      Files.write(path, text.getBytes(StandardCharsets.UTF_8))
    }
    val onDisk = new String(Files.readAllBytes(path), StandardCharsets.UTF_8)
    assert(onDisk == text, "docs/expressions.md is stale: run `make docs`")
  }

  test("every native function class is one of Spark's built-in functions") {
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
