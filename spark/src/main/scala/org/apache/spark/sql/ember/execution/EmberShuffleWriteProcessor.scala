package org.apache.spark.sql.ember.execution

import scala.jdk.CollectionConverters._

import org.apache.spark.{ShuffleDependency, SparkEnv, SparkException, TaskContext}
import org.apache.spark.internal.config.SHUFFLE_IO_PLUGIN_CLASS
import org.apache.spark.scheduler.MapStatus
import org.apache.spark.shuffle.{
  ShuffleDataIOUtils,
  ShufflePartitionPairsWriter,
  ShuffleWriteMetricsReporter,
  ShuffleWriteProcessor
}
import org.apache.spark.shuffle.api.ShuffleExecutorComponents
import org.apache.spark.shuffle.checksum.ShuffleChecksumSupport
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.shuffle.sort.io.LocalDiskShuffleDataIO
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLShuffleWriteMetricsReporter}
import org.apache.spark.storage.ShuffleBlockId
import org.apache.spark.util.Utils

/**
 * The map side of [[EmberShuffleExchangeExec]]: the native writer emits its blocks in ascending partition order,
 * so they are written as they come, partition after partition, into the map task's one shuffle output file —
 * as Spark's sort-based writers do after sorting. Spark's own writer for a shuffle of at most
 * `spark.shuffle.sort.bypassMergeThreshold` (200) partitions opens a temporary file per partition and
 * concatenates them at the end; on a fast query that file churn was ~10% of the map task.
 *
 * Only under Spark's `SortShuffleManager` with its local-disk shuffle IO and no push-based merge, whose file
 * layout this is; any other shuffle manager or IO plugin gets its own writer (`super.write`). Streams,
 * compression, checksums and metrics are Spark's (`ShufflePartitionPairsWriter`, as `ExternalSorter` uses it).
 */
class EmberShuffleWriteProcessor(metrics: Map[String, SQLMetric])
    extends ShuffleWriteProcessor
    with ShuffleChecksumSupport {

  override protected def createMetricsReporter(context: TaskContext): ShuffleWriteMetricsReporter =
    new SQLShuffleWriteMetricsReporter(context.taskMetrics().shuffleWriteMetrics, metrics)

  override def write(
      inputs: Iterator[_],
      dep: ShuffleDependency[_, _, _],
      mapId: Long,
      mapIndex: Int,
      context: TaskContext
  ): MapStatus = SparkEnv.get.shuffleManager match {
    case manager: SortShuffleManager if EmberShuffleWriteProcessor.localDisk && !dep.shuffleMergeEnabled =>
      writeInPartitionOrder(manager, inputs.asInstanceOf[Iterator[Product2[Int, Any]]], dep, mapId, context)
    case _ => super.write(inputs, dep, mapId, mapIndex, context)
  }

  private def writeInPartitionOrder(
      manager: SortShuffleManager,
      records: Iterator[Product2[Int, Any]],
      dep: ShuffleDependency[_, _, _],
      mapId: Long,
      context: TaskContext
  ): MapStatus = {
    val env = SparkEnv.get
    val reporter = createMetricsReporter(context)
    // The manager deletes a shuffle's files when it is unregistered, for the map tasks it handed a writer to:
    // take one (never used) so that this task's output is deleted with the others.
    manager.getWriter[Any, Any](dep.shuffleHandle, mapId, context, reporter).stop(success = false)

    val numPartitions = dep.partitioner.numPartitions
    val output =
      EmberShuffleWriteProcessor.components(env).createMapOutputWriter(dep.shuffleId, mapId, numPartitions)
    val serializer = dep.serializer.newInstance()
    val checksums = createPartitionChecksums(numPartitions, env.conf)
    var writer: ShufflePartitionPairsWriter = null
    try {
      var current = -1
      while (records.hasNext) {
        val record = records.next()
        val partition = record._1
        if (partition != current) {
          if (partition < current) {
            throw SparkException.internalError(
              s"Ember: native shuffle blocks out of partition order ($partition after $current)"
            )
          }
          if (writer != null) writer.close()
          current = partition
          writer = new ShufflePartitionPairsWriter(
            output.getPartitionWriter(partition),
            env.serializerManager,
            serializer,
            ShuffleBlockId(dep.shuffleId, mapId, partition),
            reporter,
            if (checksums.nonEmpty) checksums(partition) else null
          )
        }
        writer.write(partition, record._2)
      }
      if (writer != null) writer.close()
      val lengths = output.commitAllPartitions(getChecksumValues(checksums)).getPartitionLengths
      MapStatus(env.blockManager.shuffleServerId, lengths, mapId)
    } catch {
      case e: Throwable =>
        Utils.tryLogNonFatalError(if (writer != null) writer.close())
        Utils.tryLogNonFatalError(output.abort(e))
        throw e
    }
  }
}

object EmberShuffleWriteProcessor {

  /** Spark's default shuffle IO: the one file per map task (plus index) that this writer produces. */
  private def localDisk: Boolean =
    SparkEnv.get.conf.get(SHUFFLE_IO_PLUGIN_CLASS) == classOf[LocalDiskShuffleDataIO].getName

  @volatile private var cached: (SparkEnv, ShuffleExecutorComponents) = _

  /**
   * The executor's shuffle IO components, set up as `SortShuffleManager` sets up its own (whose are private);
   * again for a new `SparkEnv` (a new `SparkContext` in the same JVM).
   */
  private def components(env: SparkEnv): ShuffleExecutorComponents = synchronized {
    if (cached == null || (cached._1 ne env)) {
      val components = ShuffleDataIOUtils.loadShuffleDataIO(env.conf).executor()
      val extra = env.conf.getAllWithPrefix(ShuffleDataIOUtils.SHUFFLE_SPARK_CONF_PREFIX).toMap
      components.initializeExecutor(env.conf.getAppId, env.executorId, extra.asJava)
      cached = (env, components)
    }
    cached._2
  }
}
