package org.ember

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}

import org.scalatest.funsuite.AnyFunSuite

/** docs/configs.md is generated from [[EmberConf]]; `make docs` rewrites it, this suite keeps it current. */
class EmberConfDocsSuite extends AnyFunSuite {
  private val path = Paths.get(sys.props.getOrElse("ember.docs", "../docs/configs.md"))

  test("docs/configs.md matches EmberConf") {
    if (sys.props.get("ember.writeDocs").contains("true")) {
      Files.write(path, EmberConf.markdown.getBytes(StandardCharsets.UTF_8))
    }
    val onDisk = new String(Files.readAllBytes(path), StandardCharsets.UTF_8)
    assert(onDisk == EmberConf.markdown, "docs/configs.md is stale: run `make docs`")
  }

  test("every key is prefixed, camelCase, and booleans end in .enabled") {
    EmberConf.all.foreach { e =>
      assert(e.key.startsWith("spark.ember."), e.key)
      assert(!e.key.contains("_") && !e.key.contains("-"), e.key)
      if (e.default.isInstanceOf[Boolean]) assert(e.key.endsWith(".enabled"), e.key)
      assert(e.doc.nonEmpty, e.key)
    }
  }
}
