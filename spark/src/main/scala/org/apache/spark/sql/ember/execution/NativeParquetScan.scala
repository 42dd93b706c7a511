package org.apache.spark.sql.ember.execution

import scala.jdk.CollectionConverters._

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.execution.{ExecSubqueryExpression, FileSourceScanExec}
import org.apache.spark.sql.execution.datasources.FileScanRDD
import org.apache.spark.sql.catalyst.expressions.{
  And,
  AttributeReference,
  EqualTo,
  Expression,
  GreaterThan,
  GreaterThanOrEqual,
  In,
  InSet,
  IsNotNull,
  IsNull,
  LessThan,
  LessThanOrEqual,
  Literal
}
import org.apache.spark.sql.catalyst.util.RebaseDateTime
import org.apache.spark.sql.execution.datasources.parquet.{ParquetFileFormat, ParquetOptions, ParquetUtils}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.apache.spark.util.Utils
import org.apache.spark.sql.ember.serde.ExprSerde
import org.ember.EmberConf
import org.ember.jni.NativeLib
import org.ember.proto

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
    else if (
      scan.output.map(_.name) != (scan.requiredSchema.fieldNames ++ relation.partitionSchema.fieldNames).toSeq
    )
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
    // Spark's test hook that reads every file as CORRECTED (its rebase suites prove files need rebasing).
    else if (Utils.isTesting && conf.getConfString("spark.test.forceNoRebase", "") == "true")
      Some("spark.test.forceNoRebase is set")
    else
      scan.requiredSchema.fields
        .collectFirst {
          case f if !readable(f.dataType) =>
            s"column ${f.name}: ${f.dataType.simpleString} is read by Spark"
        }
        .orElse(relation.partitionSchema.fields.collectFirst {
          case f
              if !readable(f.dataType) || ExprSerde
                .literal(null, f.dataType, conf.sessionLocalTimeZone)
                .isLeft =>
            s"partition column ${f.name}: ${f.dataType.simpleString} is read by Spark"
        })
        .orElse(timestampsUnsupported(scan))
  }

  /**
   * Timestamp (with local time zone) reads the native reader cannot do exactly: INT96 values shifted to the
   * session time zone. (LEGACY rebasing is the reader's, by Spark's own per-zone tables; the few values Spark
   * rebases with the JVM's calendar instead fail the read, naming the key that leaves the scan to Spark.)
   */
  private def timestampsUnsupported(scan: FileSourceScanExec): Option[String] = {
    val conf = SQLConf.get
    scan.requiredSchema.fields
      .find(_.dataType == TimestampType)
      .filter(_ => conf.isParquetINT96TimestampConversion)
      .map(f => s"column ${f.name}: ${SQLConf.PARQUET_INT96_TIMESTAMP_CONVERSION.key} is true")
  }

  private def mode(policy: String): proto.ParquetScanRebaseMode =
    policy.toUpperCase(java.util.Locale.ROOT) match {
      case "CORRECTED" => proto.ParquetScanRebaseMode.PARQUET_SCAN_REBASE_MODE_CORRECTED
      case "LEGACY" => proto.ParquetScanRebaseMode.PARQUET_SCAN_REBASE_MODE_LEGACY
      case _ => proto.ParquetScanRebaseMode.PARQUET_SCAN_REBASE_MODE_EXCEPTION
    }

  // Flat types. Dates and timestamps as Spark's vectorized reader reads them, rebased as it does.
  private def readable(dt: DataType): Boolean = dt match {
    case BooleanType | ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType | BinaryType |
        DateType | TimestampType | TimestampNTZType =>
      true
    case s: StringType => s.isUTF8BinaryCollation
    case _: DecimalType => true
    case _ => false
  }

  /**
   * The conjuncts of `scan`'s data filters that the reader can skip row groups and pages with and filter rows
   * by: a data column (by its index among the requested ones) compared with literals of its own type. Spark
   * keeps every data filter above the scan, so the subset only ever saves reading; the engine judges which it
   * can use exactly.
   */
  private[execution] def pushedFilters(scan: FileSourceScanExec, tz: String): Seq[proto.ParquetScanFilter] = {
    import proto.ParquetScanFilterOp._
    val dataColumns = scan.output
      .take(scan.requiredSchema.length)
      .zipWithIndex
      .map { case (a, i) =>
        a.exprId -> i
      }
      .toMap
    def prunable(dt: DataType): Boolean = dt match {
      case ByteType | ShortType | IntegerType | LongType | DateType | _: DecimalType => true
      case s: StringType => s.isUTF8BinaryCollation
      case _ => false
    }
    def column(e: Expression): Option[Int] = e match {
      case a: AttributeReference if prunable(a.dataType) => dataColumns.get(a.exprId)
      case _ => None
    }
    def filter(op: proto.ParquetScanFilterOp, e: Expression, values: Seq[Literal]) =
      column(e).filter(_ => values.forall(_.dataType == e.dataType)).flatMap { i =>
        val lits = values.map(v => ExprSerde.literal(v.value, v.dataType, tz))
        if (lits.exists(_.isLeft)) None
        else
          Some(
            proto.ParquetScanFilter
              .newBuilder()
              .setColumn(i)
              .setOp(op)
              .addAllValues(lits.map(_.toOption.get).asJava)
              .build()
          )
      }
    def conjuncts(e: Expression): Seq[Expression] = e match {
      case And(l, r) => conjuncts(l) ++ conjuncts(r)
      case other => Seq(other)
    }
    scan.dataFilters.flatMap(conjuncts).flatMap {
      case EqualTo(a, l: Literal) => filter(PARQUET_SCAN_FILTER_OP_EQ, a, Seq(l))
      case EqualTo(l: Literal, a) => filter(PARQUET_SCAN_FILTER_OP_EQ, a, Seq(l))
      case LessThan(a, l: Literal) => filter(PARQUET_SCAN_FILTER_OP_LT, a, Seq(l))
      case LessThan(l: Literal, a) => filter(PARQUET_SCAN_FILTER_OP_GT, a, Seq(l))
      case LessThanOrEqual(a, l: Literal) => filter(PARQUET_SCAN_FILTER_OP_LE, a, Seq(l))
      case LessThanOrEqual(l: Literal, a) => filter(PARQUET_SCAN_FILTER_OP_GE, a, Seq(l))
      case GreaterThan(a, l: Literal) => filter(PARQUET_SCAN_FILTER_OP_GT, a, Seq(l))
      case GreaterThan(l: Literal, a) => filter(PARQUET_SCAN_FILTER_OP_LT, a, Seq(l))
      case GreaterThanOrEqual(a, l: Literal) => filter(PARQUET_SCAN_FILTER_OP_GE, a, Seq(l))
      case GreaterThanOrEqual(l: Literal, a) => filter(PARQUET_SCAN_FILTER_OP_LE, a, Seq(l))
      case IsNull(a) => filter(PARQUET_SCAN_FILTER_OP_IS_NULL, a, Nil)
      case IsNotNull(a) => filter(PARQUET_SCAN_FILTER_OP_IS_NOT_NULL, a, Nil)
      case In(a, list) if list.nonEmpty && list.forall(_.isInstanceOf[Literal]) =>
        filter(PARQUET_SCAN_FILTER_OP_IN, a, list.map(_.asInstanceOf[Literal]))
      case InSet(a, set) if set.nonEmpty =>
        filter(PARQUET_SCAN_FILTER_OP_IN, a, set.toSeq.map(v => Literal.create(v, a.dataType)))
      case _ => None
    }
  }

  /** One `ParquetSource` per partition of the scan's own `FileScanRDD`. */
  def rdd(
      scan: FileSourceScanExec,
      metrics: ParquetScanMetrics,
      dynamicFilters: Seq[proto.ParquetScanDynamicFilter] = Nil
  ): RDD[InputIterator] = {
    // Spark waits for a scan's subqueries (a scalar subquery pushed into its data filters, dynamic partition
    // pruning) when it executes the scan; read natively, the scan itself never executes, so their results are
    // fetched here before its files and filters are worked out (the subqueries' own results are cached).
    scan.prepare()
    scan.expressions.foreach(_.foreach {
      case e: ExecSubqueryExpression => e.updateResult()
      case _ =>
    })
    val partitions = scan.inputRDD match {
      case f: FileScanRDD => f.filePartitions
      case other => throw new IllegalStateException(s"a Parquet scan read through ${other.getClass.getName}")
    }
    val columns = scan.requiredSchema.fieldNames.toSeq.asJava
    val caseSensitive = SQLConf.get.caseSensitiveAnalysis
    // The read modes as Spark's ParquetFileFormat takes them: the scan's options, else the session's conf.
    val options = new ParquetOptions(scan.relation.options, SQLConf.get)
    val datetimeMode = mode(options.datetimeRebaseModeInRead)
    val partitionSchema = scan.relation.partitionSchema
    val tz = SQLConf.get.sessionLocalTimeZone
    val int96Mode = mode(options.int96RebaseModeInRead)
    val pushdown = EmberConf.PARQUET_SCAN_PUSHDOWN.get(SQLConf.get)
    val filters =
      if (pushdown) pushedFilters(scan, tz).asJava
      else java.util.Collections.emptyList[proto.ParquetScanFilter]()
    val filterRows = pushdown && EmberConf.PARQUET_SCAN_ROW_FILTER.get(SQLConf.get)
    val tasks = partitions.map { p =>
      val task = proto.ParquetScanTask
        .newBuilder()
        .addAllColumns(columns)
        .setCaseSensitive(caseSensitive)
        .setDatetimeRebaseMode(datetimeMode)
        .setInt96RebaseMode(int96Mode)
        .setLastSwitchJulianDay(RebaseDateTime.lastSwitchJulianDay)
        .setLastSwitchJulianTs(RebaseDateTime.lastSwitchJulianTs)
        .addAllFilters(filters)
        .addAllDynamicFilters(dynamicFilters.asJava)
        .setFilterRows(filterRows)
      p.files.foreach { f =>
        val split = proto.ParquetSplit
          .newBuilder()
          .setPath(f.toPath.toUri.getPath)
          .setStart(f.start)
          .setLength(f.length)
          .setDisplayPath(f.urlEncodedPath)
        // The file's partition values, appended by the reader after the data columns (as FileScanRDD does).
        partitionSchema.fields.zipWithIndex.foreach { case (field, i) =>
          val value = f.partitionValues.get(i, field.dataType)
          ExprSerde.literal(value, field.dataType, tz) match {
            case Right(lit) => split.addPartitionValues(lit)
            case Left(why) => throw new IllegalStateException(s"partition value of ${field.name}: $why")
          }
        }
        task.addSplits(split)
      }
      (task.build().toByteArray, p.files.length)
    }
    val sc = scan.session.sparkContext
    if (tasks.isEmpty) return sc.emptyRDD[InputIterator]
    val timestamps = scan.requiredSchema.exists(_.dataType == TimestampType)
    sc.parallelize(tasks, tasks.size).mapPartitions { it =>
      val (task, splits) = it.next()
      metrics.splitsRead += splits
      if (timestamps) JulianRebaseTables.register()
      // The zone Spark rebases LEGACY timestamps in is this executor's default (RebaseSpec.timeZone).
      val local = proto.ParquetScanTask
        .parseFrom(task)
        .toBuilder
        .setDefaultTimeZone(java.util.TimeZone.getDefault.getID)
        .build()
      Iterator(InputIterator.Parquet(new ParquetSource(local.toByteArray, metrics)))
    }
  }
}

/** Spark's rebase tables for LEGACY Parquet timestamps, handed to the engine once per JVM. */
private object JulianRebaseTables {
  private lazy val registered: Unit = {
    val tables = proto.JulianRebaseTables.newBuilder()
    RebaseDateTime.loadRebaseRecords("julian-gregorian-rebase-micros.json").foreach { case (zone, info) =>
      tables.addZones(
        proto.JulianRebaseTable
          .newBuilder()
          .setZone(zone)
          .addAllSwitches(info.switches.toSeq.map(Long.box).asJava)
          .addAllDiffs(info.diffs.toSeq.map(Long.box).asJava)
      )
    }
    NativeLib.load()
    NativeLib.registerJulianRebase(tables.build().toByteArray)
  }

  def register(): Unit = registered
}
