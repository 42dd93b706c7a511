package org.apache.spark.sql.ember.execution

import org.apache.spark.{Partition, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.DataType
import org.apache.spark.sql.vectorized.ColumnarBatch

/**
 * A shuffle read as Arrow-backed batches, decoded on the JVM ([[DecodedBlocks]]) for Spark's own consumers. A
 * native consumer finds this RDD under whatever wraps the shuffle (AQE's reads and stages, reused exchanges all
 * hand it on) and reads `blockRows` instead: the blocks then go to the native side undecoded
 * ([[ShuffleBlockSource]]), which decodes them and glues small ones into full batches.
 */
class DecodedBlocksRDD(val blockRows: RDD[InternalRow], types: Seq[DataType])
    extends RDD[ColumnarBatch](blockRows) {
  override protected def getPartitions: Array[Partition] = blockRows.partitions
  override protected def getPreferredLocations(split: Partition): Seq[String] =
    blockRows.preferredLocations(split)
  override def compute(split: Partition, context: TaskContext): Iterator[ColumnarBatch] =
    new DecodedBlocks(blockRows.iterator(split, context), types)
}
