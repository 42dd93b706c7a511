package org.apache.spark.sql.ember.serde

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.catalyst.expressions.Literal
import org.apache.spark.sql.catalyst.plans.physical.{HashPartitioning, RangePartitioning, SinglePartition}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.ember.EmberConf
import org.ember.proto

/**
 * `ShuffleExchangeExec` → the map side of Ember's columnar shuffle (`ShuffleWriter`). Only partitionings the
 * native writer reproduces exactly: Spark's hash partitioning (`pmod(murmur3(keys, 42), n)`, so a natively
 * shuffled side lines up with a side Spark shuffled) over key types whose Murmur3 hash it computes as Spark
 * does, a single partition, and Spark's range partitioning (bounds sampled by Spark's own `RangePartitioner`
 * when the exchange runs, see [[org.apache.spark.sql.ember.execution.RangeBounds]]). Round-robin (its start
 * depends on Spark's random generator and on row order) stays in Spark.
 */
object ShuffleSerde extends OperatorSerde[ShuffleExchangeExec] {
  override def enabled: EmberConf.Entry[Boolean] = EmberConf.EXEC_SHUFFLE

  /** Types the native Murmur3 hashes exactly as Spark's `Murmur3Hash` (UTF8_BINARY strings: their bytes). */
  def hashable(dt: DataType): Boolean = dt match {
    case BooleanType | ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType => true
    case DateType | TimestampType | TimestampNTZType | BinaryType => true
    case _: DecimalType => true
    case s: StringType => s.isUTF8BinaryCollation
    case _ => false
  }

  override def convert(plan: ShuffleExchangeExec): Either[String, proto.Operator] = {
    val conf = SQLConf.get
    for {
      // Arrow IPC cannot carry a batch's row count without a column (a count over a limit shuffles no columns).
      _ <-
        if (plan.child.output.isEmpty) Left("an exchange of rows without columns stays in Spark")
        else Right(())
      _ <- checkSchema(plan.child.output)
      blockSchema <- TypeSerde.schema(plan.output, conf.sessionLocalTimeZone)
      keys <- plan.outputPartitioning match {
        case h: HashPartitioning =>
          h.expressions.find(e => !hashable(e.dataType)) match {
            case Some(e) => Left(s"shuffle key of type ${e.dataType.simpleString} is not hashed natively")
            case None => ExprSerde.withJvmExpressions(ExprSerde.convertAll(h.expressions, plan.child.output))
          }
        case SinglePartition => Right(Nil)
        case _: RangePartitioning => Right(Nil)
        case other => Left(s"${other.getClass.getSimpleName.stripSuffix("$")} exchanges stay in Spark")
      }
      range <- plan.outputPartitioning match {
        case r: RangePartitioning => rangeOrder(r, plan).map(Some(_))
        case _ => Right(None)
      }
    } yield {
      val b = proto.ShuffleWriter
        .newBuilder()
        .addAllKeys(keys.asJava)
        .setNumPartitions(plan.outputPartitioning.numPartitions)
        .setBlockSchema(blockSchema)
        .setSpillBytes(EmberConf.SHUFFLE_SPILL_BYTES.get(conf))
      // The bounds are sampled when the exchange runs (RangeBounds); until then, one partition and none.
      range.foreach(order => b.setRange(true).addAllRangeOrder(order.asJava).setNumPartitions(1))
      op(_.setShuffleWriter(b))
    }
  }

  /** A range exchange's sort orders, when its bounds can travel as literals. */
  private def rangeOrder(
      r: RangePartitioning,
      plan: ShuffleExchangeExec
  ): Either[String, Seq[proto.SortOrder]] =
    if (!EmberConf.EXEC_RANGE_SHUFFLE.get()) Left(s"${EmberConf.EXEC_RANGE_SHUFFLE.key} is false")
    else
      r.ordering.map(_.dataType).find { dt =>
        ExprSerde.literal(Literal.default(dt).value, dt, SQLConf.get.sessionLocalTimeZone).isLeft
      } match {
        case Some(dt) => Left(s"range bounds of type ${dt.simpleString} cannot travel natively")
        case None => SortSerde.sortOrder(r.ordering, plan.child.output)
      }
}
