"""The native Parquet scan: a filter and a global aggregate over a Parquet table, with vanilla Spark, Ember with
Spark's vectorized reader feeding it (its vectors copied into Arrow), and Ember reading the files natively
(spark.ember.exec.parquetScan.enabled).

    dev/bench/submit.sh parquet_scan [--rows 20000000] [--files 8] [--repeat 2] [--conf k=v]...

Table: id BIGINT, i INT, d DOUBLE, s STRING (short, ~3% NULL), m DECIMAL(12,2); snappy, Spark's defaults.
Query: SELECT count(*), sum(id), sum(i), max(d), count(s), sum(m) WHERE i % 7 <> 0. Reports wall time, JVM CPU
time and whether the three configurations give identical rows (checksum outside the timed runs).
"""
import argparse
import os
import shutil
import tempfile

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from common import compare_configs

p = argparse.ArgumentParser()
p.add_argument("--rows", type=int, default=20_000_000)
p.add_argument("--files", type=int, default=8)
p.add_argument("--repeat", type=int, default=2)
p.add_argument("--conf", action="append", default=[], help="k=v set on the session for every configuration")
args = p.parse_args()

spark = SparkSession.builder.appName("ember-bench-parquet-scan").getOrCreate()
for kv in args.conf:
    k, v = kv.split("=", 1)
    spark.conf.set(k, v)

path = os.path.join(tempfile.mkdtemp(prefix="ember-bench-parquet-"), "t")
spark.range(0, args.rows, 1, args.files).select(
    F.col("id"),
    (F.xxhash64("id") % 100_000).cast("int").alias("i"),
    (F.xxhash64("id", F.lit(1)) % 1_000_000 / 7.0).alias("d"),
    F.when(F.col("id") % 31 == 0, F.lit(None)).otherwise(F.concat(F.lit("s"), (F.col("id") % 997).cast("string"))).alias("s"),
    (F.col("id") % 1_000_000 / 100).cast("decimal(12,2)").alias("m"),
).write.parquet(path)
print(f"# parquet_scan: {args.rows} rows in {args.files} files\n", flush=True)

CONFIGS = [
    ("vanilla Spark", {"spark.ember.enabled": "false"}),
    ("Ember, Spark's reader", {"spark.ember.enabled": "true", "spark.ember.exec.parquetScan.enabled": "false"}),
    ("Ember, native reader", {"spark.ember.enabled": "true", "spark.ember.exec.parquetScan.enabled": "true"}),
]


def query(_):
    return (
        spark.read.parquet(path)
        .where(F.col("i") % 7 != 0)
        .agg(F.count("*"), F.sum("id"), F.sum("i"), F.max("d"), F.count("s"), F.sum("m"))
    )


compare_configs(spark, CONFIGS, ["filter + global aggregate"], query, "query", repeat=args.repeat)
shutil.rmtree(os.path.dirname(path), ignore_errors=True)
