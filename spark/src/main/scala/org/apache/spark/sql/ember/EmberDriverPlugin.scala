package org.apache.spark.sql.ember

import java.util.{Collections, Map => JMap}

import org.apache.spark.SparkContext
import org.apache.spark.api.plugin.{DriverPlugin, PluginContext}
import org.apache.spark.internal.Logging
import org.apache.spark.internal.config.MEMORY_OFFHEAP_ENABLED
import org.apache.spark.sql.internal.StaticSQLConf
import org.apache.spark.sql.ember.execution.EmberCachedBatchSerializer
import org.ember.{EmberConf, EmberSessionExtensions}

/** Driver side of [[org.ember.EmberPlugin]]. */
class EmberDriverPlugin extends DriverPlugin with Logging {
  override def init(sc: SparkContext, ctx: PluginContext): JMap[String, String] = {
    EmberDriverPlugin.registerExtensions(sc)
    EmberDriverPlugin.registerCacheSerializer(sc)
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

  /**
   * Makes Ember's serializer the cache's (`spark.ember.cache.enabled`) before the first session reads the static
   * `spark.sql.cache.serializer`, unless the application chose one.
   */
  def registerCacheSerializer(sc: SparkContext): Unit = {
    val key = StaticSQLConf.SPARK_CACHE_SERIALIZER.key
    if (EmberConf.CACHE_ENABLED.get(k => sc.conf.getOption(k)) && !sc.conf.contains(key)) {
      sc.conf.set(key, classOf[EmberCachedBatchSerializer].getName)
    }
  }

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
