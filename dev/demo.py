"""Ember's demo: the same queries with Ember off and on, in one spark-submit run.

For each query: the native operators in the executed plan, whether the results are identical (an
order-sensitive checksum of every output row), and the wall-time ratio Spark / Ember (best of N runs).
Usage: dev/demo.sh [--rows N] [--runs N]
"""
import argparse
import re
import shutil
import tempfile
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

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

QUERIES = {
    "filter + project": lambda: data.where((F.col("d") > 250.0) & F.col("n").isNotNull() & (F.col("s") != "item-7"))
    .select("id", "k", "s", "d"),
    "sort (global, 2 keys)": lambda: data.orderBy(F.col("s"), F.col("k").desc()),
    "filter + sort within partitions": lambda: data.where(F.col("k") % 3 == 1).sortWithinPartitions("d", "id"),
}


P = (1 << 61) - 1
B = 1_000_003


def _partition_hash(rows):
    h, n = 0, 0
    for (x,) in rows:
        h = (h * B + (x % P)) % P
        n += 1
    yield h, n


def checksum(df):
    """Order-sensitive checksum of the whole output: a polynomial rolling hash of every row's xxhash64 in output
    order, computed per partition and combined in partition order (so it does not depend on how the rows are
    split into partitions). Returns it with the executed plan of the query."""
    hashed = df.select(F.xxhash64(*[F.col(c) for c in df.columns]).alias("h"))
    parts = hashed.rdd.mapPartitions(_partition_hash).collect()
    total, count = 0, 0
    for h, n in parts:
        total = (total * pow(B, n, P) + h) % P
        count += n
    return (total, count), hashed._jdf.queryExecution().executedPlan().toString()


def run(query, ember):
    spark.conf.set("spark.ember.enabled", str(ember).lower())
    best = float("inf")
    for _ in range(args.runs):
        t0 = time.perf_counter()
        query().write.format("noop").mode("overwrite").save()
        best = min(best, time.perf_counter() - t0)
    result, plan = checksum(query())
    return best, result, plan


def native_nodes(plan_text):
    return sorted(set(re.findall(r"Ember[A-Za-z]+Exec", plan_text)))


print()
print(f"{'query':34} {'Spark s':>8} {'Ember s':>8} {'speedup':>8}  same rows  native operators")
all_same = True
plans = {}
for name, q in QUERIES.items():
    spark_t, spark_sum, _ = run(q, ember=False)
    ember_t, ember_sum, plan = run(q, ember=True)
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
