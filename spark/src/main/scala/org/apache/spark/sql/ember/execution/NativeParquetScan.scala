package org.apache.spark.sql.ember.execution

import scala.jdk.CollectionConverters._

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.execution.datasources.FileScanRDD
import org.apache.spark.sql.execution.datasources.parquet.{ParquetFileFormat, ParquetUtils}
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.ember.EmberConf
import org.ember.proto

/**
 * One task's Parquet file splits, read natively ([[NativeParquetScan]]): the engine takes `task` (a
 * `ParquetScanTask` proto) and calls [[checkKilled]] before every batch, so a cancelled task stops.
 */
final class ParquetSource(val task: Array[Byte]) extends NativeInputSource

/**
 * A Parquet `FileSourceScanExec` read by a native block: each task's `FilePartition` (Spark's own: the same
 * files, splits, bucketing and pruning) goes to the engine as paths and byte ranges, and arrow-rs reads them
 * into Arrow batches, instead of Spark's vectorized reader filling JVM vectors that are then copied into Arrow.
 * Only scans whose every Spark semantic the native reader keeps come here; [[unsupported]] says why not.
 */
object NativeParquetScan {

  /** Why `scan` stays Spark's (its batches copied into Arrow), or None when it is read natively. */
  def unsupported(scan: FileSourceScanExec): Option[String] = {
    val conf = SQLConf.get
    val relation = scan.relation
    def option(key: String) = relation.options.get(key).map(_.toBoolean)
    if (!EmberConf.EXEC_PARQUET_SCAN.get(conf)) Some(s"${EmberConf.EXEC_PARQUET_SCAN.key} is false")
    else if (relation.fileFormat.getClass != classOf[ParquetFileFormat])
      Some(s"file format ${relation.fileFormat} is not Parquet")
    else if (relation.partitionSchema.nonEmpty) Some("partition columns are read by Spark")
    else if (scan.output.map(_.name) != scan.requiredSchema.fieldNames.toSeq)
      Some("metadata columns are read by Spark")
    else if (!relation.location.rootPaths.forall(p => p.toUri.getScheme == "file"))
      Some("only local files are read natively")
    else if (option("ignoreCorruptFiles").getOrElse(conf.ignoreCorruptFiles))
      Some("ignoreCorruptFiles is set")
    else if (option("ignoreMissingFiles").getOrElse(conf.ignoreMissingFiles))
      Some("ignoreMissingFiles is set")
    else if (
      conf.getConf(SQLConf.PARQUET_FIELD_ID_READ_ENABLED) && ParquetUtils.hasFieldIds(scan.requiredSchema)
    )
      Some("columns matched by Parquet field id are read by Spark")
    else
      scan.requiredSchema.fields.collectFirst {
        case f if !readable(f.dataType) =>
          s"column ${f.name}: ${f.dataType.simpleString} is read by Spark"
      }
  }

  // Flat, non-temporal types: dates and timestamps stay Spark's (calendar rebasing, INT96).
  private def readable(dt: DataType): Boolean = dt match {
    case BooleanType | ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType | BinaryType =>
      true
    case s: StringType => s.isUTF8BinaryCollation
    case _: DecimalType => true
    case _ => false
  }

  /** One `ParquetSource` per partition of the scan's own `FileScanRDD`. */
  def rdd(scan: FileSourceScanExec, splitsRead: SQLMetric): RDD[InputIterator] = {
    val partitions = scan.inputRDD match {
      case f: FileScanRDD => f.filePartitions
      case other => throw new IllegalStateException(s"a Parquet scan read through ${other.getClass.getName}")
    }
    val columns = scan.requiredSchema.fieldNames.toSeq.asJava
    val caseSensitive = SQLConf.get.caseSensitiveAnalysis
    val tasks = partitions.map { p =>
      val task = proto.ParquetScanTask.newBuilder().addAllColumns(columns).setCaseSensitive(caseSensitive)
      p.files.foreach { f =>
        task.addSplits(
          proto.ParquetSplit
            .newBuilder()
            .setPath(f.toPath.toUri.getPath)
            .setStart(f.start)
            .setLength(f.length)
            .setDisplayPath(f.urlEncodedPath)
        )
      }
      (task.build().toByteArray, p.files.length)
    }
    val sc = scan.session.sparkContext
    if (tasks.isEmpty) return sc.emptyRDD[InputIterator]
    sc.parallelize(tasks, tasks.size).mapPartitions { it =>
      val (task, splits) = it.next()
      splitsRead += splits
      Iterator(InputIterator.Parquet(new ParquetSource(task)))
    }
  }
}
