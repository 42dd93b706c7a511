package org.apache.spark.sql.ember

import java.util.{Collections, Map => JMap}

import org.apache.spark.SparkContext
import org.apache.spark.api.plugin.{DriverPlugin, ExecutorPlugin, PluginContext}
import org.apache.spark.internal.Logging
import org.apache.spark.internal.config.MEMORY_OFFHEAP_ENABLED
import org.apache.spark.sql.internal.StaticSQLConf
import org.ember.{EmberConf, EmberSessionExtensions}
import org.ember.jni.NativeLib

/** Driver side of [[org.ember.EmberPlugin]]. */
class EmberDriverPlugin extends DriverPlugin with Logging {
  override def init(sc: SparkContext, ctx: PluginContext): JMap[String, String] = {
    EmberDriverPlugin.registerExtensions(sc)
    if (!sc.conf.get(MEMORY_OFFHEAP_ENABLED)) {
      logWarning(
        "Ember is installed but spark.memory.offHeap.enabled is false: native memory must come from " +
          "Spark's off-heap pool, so every query runs on Spark's own operators. Set " +
          "spark.memory.offHeap.enabled=true and spark.memory.offHeap.size to use Ember."
      )
    }
    Collections.emptyMap()
  }
}

object EmberDriverPlugin {

  /** Adds Ember's extensions to `spark.sql.extensions` before the first session reads it. */
  def registerExtensions(sc: SparkContext): Unit = {
    val key = StaticSQLConf.SPARK_SESSION_EXTENSIONS.key
    val cls = classOf[EmberSessionExtensions].getName
    val current = sc.conf.get(key, "")
    if (!current.split(",").map(_.trim).contains(cls)) {
      sc.conf.set(key, if (current.trim.isEmpty) cls else s"$current,$cls")
    }
  }
}

/** Executor side of [[org.ember.EmberPlugin]]: the native library and its logging, once per executor. */
class EmberExecutorPlugin extends ExecutorPlugin with Logging {
  override def init(ctx: PluginContext, extraConf: JMap[String, String]): Unit = {
    val conf = ctx.conf()
    try {
      NativeLib.load()
      NativeLib.initLogging(
        EmberConf.NATIVE_LOG_LEVEL.get(k => conf.getOption(k)),
        EmberConf.NATIVE_LOG_CONFIG.get(k => conf.getOption(k))
      )
    } catch {
      case e: Throwable =>
        logError(
          s"Ember: native library unavailable on this executor (${NativeLib.platform()}): ${e.getMessage}"
        )
    }
  }
}
