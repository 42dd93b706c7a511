"""Aggregate functions that used to fall back to Spark: decimal sum/avg, float/double min/max, and GROUP BY a
double key, each run with vanilla Spark and with Ember (native partial and final aggregates).

    dev/bench/submit.sh aggregate_functions [--rows 20000000] [--scale 1.0] [--partitions 2] [--repeat 1]

Queries (keys: 1k distinct values, so the partial aggregate combines):
  decimal_sum_avg   GROUP BY key: sum and avg of a DECIMAL(20, 4) and of a DECIMAL(38, 10) column.
  float_min_max     GROUP BY key: min and max of a DOUBLE and of a FLOAT column (NaN and -0.0 among them).
  double_key        GROUP BY a DOUBLE key (NaN, -0.0 and 0.0 among the keys): count, sum, max.
Reports wall time, JVM CPU and shuffle bytes written per run, and checks that both configurations give identical
rows (checksum over every output row, computed outside the timed run).
"""
import argparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from common import compare_configs

CONFIGS = [
    ("vanilla Spark", {"spark.ember.enabled": "false"}),
    ("Ember", {"spark.ember.enabled": "true"}),
]


def source(spark, rows, partitions):
    df = spark.range(0, rows, 1, partitions)
    h = F.xxhash64("id")
    special = F.col("id") % 101
    dbl = (
        F.when(special == 0, F.lit(float("nan")))
        .when(special == 1, F.lit(-0.0))
        .when(special == 2, F.lit(0.0))
        .otherwise((h % 1_000_000) / F.lit(7.0))
    )
    return df.select(
        (F.col("id") % 1000).alias("key"),
        ((h % 10_000_000_000) / 10_000).cast("decimal(20,4)").alias("d20"),
        ((h % 1_000_000_000_000) / 1000).cast("decimal(38,10)").alias("d38"),
        dbl.alias("dbl"),
        dbl.cast("float").alias("flt"),
        F.when(special < 3, dbl).otherwise((h % 5000) / F.lit(4.0)).alias("dkey"),
        (F.col("id") % 997).alias("v"),
    )


def query(spark, name, rows, partitions):
    df = source(spark, rows, partitions)
    if name == "decimal_sum_avg":
        return df.groupBy("key").agg(F.sum("d20"), F.avg("d20"), F.sum("d38"), F.avg("d38"))
    if name == "float_min_max":
        return df.groupBy("key").agg(F.min("dbl"), F.max("dbl"), F.min("flt"), F.max("flt"))
    if name == "double_key":
        return df.groupBy("dkey").agg(F.count(F.lit(1)), F.sum("v"), F.max("v"))
    raise ValueError(name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies --rows")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--queries", default="decimal_sum_avg,float_min_max,double_key")
    args = ap.parse_args()
    rows = int(args.rows * args.scale)

    spark = SparkSession.builder.appName("ember-bench-aggregate-functions").getOrCreate()
    spark.conf.set("spark.sql.shuffle.partitions", str(args.partitions))
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    print(f"rows={rows} partitions={args.partitions} repeat={args.repeat}\n", flush=True)

    compare_configs(
        spark, CONFIGS, args.queries.split(","), lambda name: query(spark, name, rows, args.partitions), "query",
        args.repeat,
    )
    spark.stop()


if __name__ == "__main__":
    main()
