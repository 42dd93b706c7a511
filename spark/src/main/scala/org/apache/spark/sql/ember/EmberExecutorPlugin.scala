package org.apache.spark.sql.ember

import java.util.{Map => JMap}

import org.apache.spark.api.plugin.{ExecutorPlugin, PluginContext}
import org.apache.spark.internal.Logging
import org.ember.EmberConf
import org.ember.jni.NativeLib

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
