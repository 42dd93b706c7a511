"""Ember's demo: the same queries with Ember off and on, in one spark-submit run.

For each query: the native operators in the executed plan, whether the results are identical (a checksum of every
output row, order-sensitive where Spark defines the order; see dev/bench/common.py), and the wall-time ratio
Spark / Ember (best of N runs).
Usage: dev/demo.sh [--rows N] [--runs N]
"""
import argparse
import re
import shutil
import tempfile
import time

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

from common import checksum_and_plan  # dev/bench/common.py

parser = argparse.ArgumentParser()
parser.add_argument("--rows", type=int, default=5_000_000)
parser.add_argument("--runs", type=int, default=3)
args = parser.parse_args()

spark = SparkSession.builder.appName("ember-demo").getOrCreate()
spark.sparkContext.setLogLevel("WARN")

print(f"Writing {args.rows:,} rows to Parquet ...", flush=True)
path = tempfile.mkdtemp(prefix="ember-demo-")
(
    spark.range(0, args.rows, 1, 4)
    .select(
        F.col("id"),
        (F.col("id") * 7919 % 1000003).alias("k"),
        (F.rand(42) * 1000).alias("d"),
        F.when(F.col("id") % 17 == 0, None).otherwise(F.col("id") % 1000).alias("n"),
        F.concat(F.lit("item-"), (F.col("id") % 5000).cast("string")).alias("s"),
    )
    .write.mode("overwrite")
    .parquet(path)
)
# Every query scans the files (vectorized Parquet reader: columnar batches into Ember's native block).
data = spark.read.parquet(path)

by_n = Window.partitionBy("n").orderBy("id")
dim = data.where(F.col("id") % 10 == 0).select(F.col("k").alias("dk"), F.col("d").alias("dd"))

# name -> (query, whether its row order is defined: else rows are compared as a multiset)
QUERIES = {
    "filter + project": (
        lambda: data.where((F.col("d") > 250.0) & F.col("n").isNotNull() & (F.col("s") != "item-7")).select(
            "id", "k", "s", "d"
        ),
        True,
    ),
    "sort (global, 2 keys)": (lambda: data.orderBy(F.col("s"), F.col("k").desc()), True),
    "filter + sort within partitions": (
        lambda: data.where(F.col("k") % 3 == 1).sortWithinPartitions("d", "id"),
        True,
    ),
    "aggregate (group by, 4 functions)": (
        lambda: data.groupBy("n")
        .agg(F.sum("k").alias("sk"), F.count("*").alias("c"), F.min("id").alias("lo"), F.max("k").alias("hi"))
        .orderBy("n"),
        True,
    ),
    "window (3 sliding sums)": (
        lambda: data.select(
            "id",
            "n",
            *[F.sum("k").over(by_n.rowsBetween(-w, 0)).alias(f"sum{w}") for w in (6, 29, 89)],
        ),
        False,
    ),
    "join (shuffled hash)": (lambda: data.join(dim.hint("shuffle_hash"), F.col("k") == F.col("dk")), False),
}


def run(query, ordered, ember):
    spark.conf.set("spark.ember.enabled", str(ember).lower())
    best = float("inf")
    for _ in range(args.runs):
        t0 = time.perf_counter()
        query().write.format("noop").mode("overwrite").save()
        best = min(best, time.perf_counter() - t0)
    result, plan = checksum_and_plan(query(), ordered)
    return best, result, plan


def native_nodes(plan_text):
    return sorted(set(re.findall(r"Ember(?!Input)[A-Za-z]+", plan_text)))


print()
print(f"{'query':34} {'Spark s':>8} {'Ember s':>8} {'speedup':>8}  same rows  native operators")
all_same = True
plans = {}
for name, (q, ordered) in QUERIES.items():
    spark_t, spark_sum, _ = run(q, ordered, ember=False)
    ember_t, ember_sum, plan = run(q, ordered, ember=True)
    plans[name] = plan
    same = spark_sum == ember_sum
    all_same &= same
    print(f"{name:34} {spark_t:8.2f} {ember_t:8.2f} {spark_t / ember_t:7.2f}x  {'yes' if same else 'NO':9}  "
          f"{', '.join(native_nodes(plan)) or '(none)'}", flush=True)

print()
# The plan of the checksum run (a query executed to the end, so adaptive execution has finalized it).
print("Executed plan of the sort query with Ember on:")
print(plans["sort (global, 2 keys)"])
spark.stop()
shutil.rmtree(path, ignore_errors=True)
if not all_same:
    raise SystemExit("Ember's results differ from Spark's")
