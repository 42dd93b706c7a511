package org.apache.spark.sql.ember.execution

/** What an [[EmberBroadcastExchangeExec]] broadcasts: its child's rows as Arrow IPC stream blocks. */
final case class EmberBroadcastBlocks(blocks: Array[Array[Byte]], rows: Long)
