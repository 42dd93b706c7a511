"""HLL-gated partial aggregation (spark.ember.aggregate.adaptivePartial.*): GROUP BY key with sum/count/min/max
over three key shapes, each run with vanilla Spark, Ember with an always-combining partial aggregate (gate off)
and Ember gated.

    dev/bench/submit.sh aggregate [--rows 20000000] [--scale 1.0] [--partitions 2] [--repeat 1] [--conf k=v]...

Key shapes (each input partition is a contiguous range of ids):
  keys_1k           key = id % 1000: combining shrinks every partition to 1k rows.
  unique            key = xxhash64(id): ~all distinct, combining removes nothing.
  unique_then_1k    in each partition, the first half of the rows have unique keys and the second half repeats
                    1k keys: a probe of the first rows says "stop combining", the second half says otherwise.
Reports wall time, JVM CPU and shuffle bytes written per run, and checks that the three configurations give
identical rows (checksum over every output row, computed outside the timed run). "Ember fixed probe" is the
decision of DataFusion and Velox (after minRows rows, groups/rows > 1 - minReduction: stop combining for good),
run by the same operator for comparison.
"""
import argparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from common import compare_configs

CONFIGS = [
    ("vanilla Spark", {"spark.ember.enabled": "false"}),
    ("Ember always-partial", {"spark.ember.enabled": "true", "spark.ember.aggregate.adaptivePartial.enabled": "false"}),
    (
        "Ember fixed probe",
        {
            "spark.ember.enabled": "true",
            "spark.ember.aggregate.adaptivePartial.enabled": "true",
            "spark.ember.aggregate.adaptivePartial.fixedProbe.enabled": "true",
        },
    ),
    (
        "Ember gated",
        {
            "spark.ember.enabled": "true",
            "spark.ember.aggregate.adaptivePartial.enabled": "true",
            "spark.ember.aggregate.adaptivePartial.fixedProbe.enabled": "false",
        },
    ),
]


def keyed(spark, shape, rows, partitions):
    df = spark.range(0, rows, 1, partitions)
    per_part = rows // partitions
    if shape == "keys_1k":
        key = F.col("id") % 1000
    elif shape == "unique":
        key = F.xxhash64("id")
    elif shape == "unique_then_1k":
        pos = F.col("id") % per_part
        key = F.when(pos < per_part // 2, F.col("id") + F.lit(1 << 40)).otherwise(F.col("id") % 1000)
    else:
        raise ValueError(shape)
    return df.select(key.alias("key"), (F.col("id") % 997).alias("v"))


def query(spark, shape, rows, partitions):
    return (
        keyed(spark, shape, rows, partitions)
        .groupBy("key")
        .agg(F.sum("v").alias("s"), F.count(F.lit(1)).alias("c"), F.min("v").alias("lo"), F.max("v").alias("hi"))
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies --rows")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--shapes", default="keys_1k,unique,unique_then_1k")
    ap.add_argument("--conf", action="append", default=[], help="k=v set on the session for every configuration")
    args = ap.parse_args()
    rows = int(args.rows * args.scale)

    spark = SparkSession.builder.appName("ember-bench-aggregate").getOrCreate()
    spark.conf.set("spark.sql.shuffle.partitions", str(args.partitions))
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    for kv in args.conf:
        k, v = kv.split("=", 1)
        spark.conf.set(k, v)
    print(f"rows={rows} partitions={args.partitions} repeat={args.repeat}\n", flush=True)

    compare_configs(
        spark, CONFIGS, args.shapes.split(","), lambda shape: query(spark, shape, rows, args.partitions), "shape",
        args.repeat,
    )
    spark.stop()


if __name__ == "__main__":
    main()
