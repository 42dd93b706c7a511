"""Segmented native windows (large partitions): a few window partitions of many rows each, with a bounded spec
that Ember evaluates in segments (running sum, sliding sum and avg, running max, dense_rank, lag), written to a
no-op sink. Variants on the same Parquet input:
  vanilla           Spark's WindowExec (spark.ember.enabled=false; spills its buffered partition as needed)
  ember-seg=N       Ember's native window with spark.ember.prefixWindow.segmentRows=N for each N in --segment-rows
                    (a huge N: whole partitions, as long as the off-heap pool grants them; a refusal still cuts)
With --spec whole the query is whole-partition aggregates instead (sum / max / avg OVER (PARTITION BY k)), which
Ember cannot cut into segments: a partition the off-heap budget refuses spills to disk and is read back (run with
a small BENCH_OFFHEAP to see it; the segment sizes then do not matter).
Reported: wall time, the window stage's run time, JVM CPU, and whether every variant's rows checksum equal to
vanilla's (ROWS frames ordered by a unique key, so the answer is deterministic).

    dev/bench/submit.sh prefix_window_segments [--rows 20000000] [--partitions 4] [--segment-rows 4096,16384,65536,1099511627776]
        [--spec bounded|whole] [--ansi on|off] [--repeat 1] [--conf k=v]...
"""
import argparse
import os
import shutil
import tempfile

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

from common import checksum, noop_write, stage_ids, stages_since, table, timed

p = argparse.ArgumentParser()
p.add_argument("--rows", type=int, default=20_000_000)
p.add_argument("--partitions", type=int, default=4, help="window partitions (PARTITION BY keys)")
p.add_argument("--segment-rows", default="4096,16384,65536,1099511627776")
p.add_argument("--ansi", default="on", choices=["off", "on"])
p.add_argument("--spec", default="bounded", choices=["bounded", "whole"], help="whole: OVER (PARTITION BY k) aggregates")
p.add_argument("--repeat", type=int, default=1, help="runs per variant; the fastest is reported")
p.add_argument("--conf", action="append", default=[], help="k=v set on the session for every variant")
args = p.parse_args()

spark = SparkSession.builder.appName("ember-bench-window-segments").getOrCreate()
spark.conf.set("spark.sql.ansi.enabled", "true" if args.ansi == "on" else "false")
spark.conf.set("spark.sql.shuffle.partitions", str(max(1, args.partitions)))
for kv in args.conf:
    k, v = kv.split("=", 1)
    spark.conf.set(k, v)

path = os.path.join(tempfile.mkdtemp(prefix="ember-bench-window-segments-"), "events")
spark.range(args.rows).select(
    (F.col("id") % args.partitions).alias("k"),
    F.col("id").alias("seq"),
    (F.col("id") / 7).cast("long").alias("t"),
    F.when(F.abs(F.xxhash64("id")) % 50 == 0, F.lit(None))
    .otherwise(F.abs(F.xxhash64("id", F.lit(1))) % 1_000_000)
    .cast("long")
    .alias("v"),
).write.parquet(path)
print(f"# window_segments: {args.rows} rows in {args.partitions} window partitions, spec={args.spec}, ansi={args.ansi}\n")


def query():
    df = spark.read.parquet(path)
    if args.spec == "whole":
        part = Window.partitionBy("k")
        return df.select(
            "k",
            "seq",
            F.sum("v").over(part).alias("total"),
            F.max("v").over(part).alias("mx"),
            F.avg("v").over(part).alias("a"),
        )
    w = Window.partitionBy("k").orderBy("seq")
    peers = Window.partitionBy("k").orderBy("t")
    return df.select(
        "k",
        "seq",
        F.sum("v").over(w.rowsBetween(Window.unboundedPreceding, Window.currentRow)).alias("run"),
        F.sum("v").over(w.rowsBetween(-29, 0)).alias("s30"),
        F.avg("v").over(w.rowsBetween(-10, 5)).alias("a"),
        F.lag("v", 3).over(w).alias("lg"),
        F.max("v").over(peers).alias("mx"),
        F.dense_rank().over(peers).alias("dr"),
    )


variants = [("vanilla", {"spark.ember.enabled": "false"})] + [
    (f"ember-seg={n}", {"spark.ember.enabled": "true", "spark.ember.prefixWindow.segmentRows": n})
    for n in args.segment_rows.split(",")
]
results = []
vanilla = None
for name, confs in variants:
    for k, v in confs.items():
        spark.conf.set(k, v)
    best = None
    for _ in range(args.repeat):
        known = stage_ids(spark)
        wall, cpu, _, error = timed(spark, lambda: noop_write(query()))
        stages = stages_since(spark, known)
        stage = max((s["run_s"] for s in stages), default=float("nan"))
        if best is None or wall < best[0]:
            best = (wall, stage, cpu, error)
    wall, stage, cpu, error = best
    check = checksum(query())
    if vanilla is None:
        vanilla = (wall, check)
    same = "yes" if check == vanilla[1] else "NO"
    results.append([name, f"{wall:.2f}", f"{stage:.2f}", f"{cpu:.1f}", f"{vanilla[0] / wall:.1f}x", same, error or ""])
    print(f"{name}: wall {wall:.2f}s window stage {stage:.2f}s rows {check[1]} {error or ''}", flush=True)

print()
table(["variant", "wall s", "window stage s", "JVM CPU s", "vs vanilla", "rows equal", "error"], results)
shutil.rmtree(os.path.dirname(path), ignore_errors=True)
