package org.ember

import org.apache.spark.api.plugin.{DriverPlugin, ExecutorPlugin, SparkPlugin}
import org.apache.spark.sql.ember.{EmberDriverPlugin, EmberExecutorPlugin}

/**
 * `spark.plugins=org.ember.EmberPlugin`: on the driver, installs Ember's session extensions and checks the
 * memory set-up; on executors, loads the native library and sets up native logging.
 */
class EmberPlugin extends SparkPlugin {
  override def driverPlugin(): DriverPlugin = new EmberDriverPlugin
  override def executorPlugin(): ExecutorPlugin = new EmberExecutorPlugin
}
