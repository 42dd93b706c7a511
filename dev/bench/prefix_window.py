"""Prefix-difference windows (EmberPrefixWindowExec, the SlidingSumRewrite rule): rolling integral sums over several
horizons, the shape from the field.

~2M rows (11k sellers x 180 days at --scale 1), M integral measures, SUM(m) OVER (PARTITION BY seller ORDER BY
day ROWS BETWEEN n PRECEDING AND CURRENT ROW) for every n in --widths (M x H window columns), written to a
no-op sink. Variants, side by side on the same Parquet input:
  vanilla        Spark's WindowExec (spark.ember.enabled=false)
  vanilla+rule   Spark's WindowExec after SlidingSumRewrite (spark.ember.slidingSumRewrite.enabled; ANSI off only)
  ember-refold   Ember's native window with prefix evaluation off (one add-and-retract accumulator per frame)
  ember-prefix   Ember's native window with prefix evaluation on
  ember-prefix+shuffle  the same over Ember's columnar shuffle (spark.ember.exec.shuffle.enabled)
  spark-floor    not this query: one row_number() over the same spec in Spark's own operators, with the same
                 columns shuffled, sorted and written out (each measure copied into every window column), the
                 least any rewrite that keeps Spark's window operator (vanilla+rule) can cost (rows equal: n/a)
Shapes: M measures x widths; 1 measure x widths; M measures x widths*4. Reported: whole-query wall time, the
window stage's executor run time (Spark's stage metrics: the query's last stage, which reads the shuffle, sorts
and evaluates the window), JVM CPU, and whether every variant's rows checksum equal to vanilla's.

    dev/bench/submit.sh prefix_window [--scale 1.0] [--measures 6] [--widths 2,6,29,89,179] [--ansi off|on] [--repeat 1]
        [--variants ...] [--shapes all,one,x4] [--conf k=v]...
"""
import argparse
import os
import shutil
import tempfile

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

from common import checksum, noop_write, stage_ids, stages_since, table, timed

p = argparse.ArgumentParser()
p.add_argument("--scale", type=float, default=1.0, help="1.0 = 11,000 sellers x 180 days (1.98M rows)")
p.add_argument("--days", type=int, default=180)
p.add_argument("--measures", type=int, default=6)
p.add_argument("--widths", default="2,6,29,89,179", help="n of ROWS BETWEEN n PRECEDING AND CURRENT ROW")
p.add_argument("--ansi", default="off", choices=["off", "on"], help="spark.sql.ansi.enabled for every variant")
p.add_argument("--repeat", type=int, default=1, help="runs per variant; the fastest is reported")
p.add_argument("--variants", default="vanilla,vanilla+rule,ember-refold,ember-prefix")
p.add_argument("--shapes", default="all,one,x4", help="all: M measures; one: 1 measure; x4: widths x 4")
p.add_argument("--conf", action="append", default=[], help="k=v set on the session for every variant")
args = p.parse_args()

spark = SparkSession.builder.appName("ember-bench-window").getOrCreate()
spark.conf.set("spark.sql.ansi.enabled", "true" if args.ansi == "on" else "false")
for kv in args.conf:
    k, v = kv.split("=", 1)
    spark.conf.set(k, v)
sellers = max(1, int(11_000 * args.scale))
widths = [int(w) for w in args.widths.split(",")]

# Input: Parquet, so that every variant reads the same bytes. Measures: non-negative 32-bit-range longs with 2% nulls.
path = os.path.join(tempfile.mkdtemp(prefix="ember-bench-window-"), "sales")
base = spark.range(sellers * args.days).select(
    (F.col("id") / args.days).cast("long").alias("seller"),
    (F.col("id") % args.days).cast("int").alias("day"),
    *[
        F.when(F.abs(F.xxhash64("id", F.lit(j))) % 50 == 0, F.lit(None))
        .otherwise(F.abs(F.xxhash64("id", F.lit(100 + j))) % 1_000_000)
        .cast("long")
        .alias(f"m{j}")
        for j in range(args.measures)
    ],
)
base.write.parquet(path)
rows = spark.read.parquet(path).count()
print(f"# window: {sellers} sellers x {args.days} days = {rows} rows, ansi={args.ansi}, widths={widths}\n")

VARIANTS = {
    "vanilla": {"spark.ember.enabled": "false", "spark.ember.slidingSumRewrite.enabled": "false"},
    "vanilla+rule": {"spark.ember.enabled": "false", "spark.ember.slidingSumRewrite.enabled": "true"},
    "ember-refold": {
        "spark.ember.enabled": "true",
        "spark.ember.slidingSumRewrite.enabled": "false",
        "spark.ember.prefixWindow.prefixDifference.enabled": "false",
        "spark.ember.exec.shuffle.enabled": "false",
    },
    "ember-prefix": {
        "spark.ember.enabled": "true",
        "spark.ember.slidingSumRewrite.enabled": "false",
        "spark.ember.prefixWindow.prefixDifference.enabled": "true",
        "spark.ember.exec.shuffle.enabled": "false",
    },
    # Not the benchmark's query: one row_number() over the same spec in Spark's own operators (same scan, shuffle
    # and sort). The least any rewrite that keeps Spark's window operator (the Catalyst rule) can cost.
    "spark-floor": {"spark.ember.enabled": "false", "spark.ember.slidingSumRewrite.enabled": "false"},
    "ember-prefix+shuffle": {
        "spark.ember.enabled": "true",
        "spark.ember.slidingSumRewrite.enabled": "false",
        "spark.ember.prefixWindow.prefixDifference.enabled": "true",
        "spark.ember.exec.shuffle.enabled": "true",
    },
}


def query(measures, ws, floor=False):
    df = spark.read.parquet(path)
    w = Window.partitionBy("seller").orderBy("day")
    if floor:
        # Every measure through the shuffle and sort, and as many output columns, as the real query.
        rn = F.row_number().over(w).alias("rn")
        return df.select("seller", "day", rn, *[F.col(f"m{j}").alias(f"m{j}_{n}") for j in range(measures) for n in ws])
    cols = [F.sum(f"m{j}").over(w.rowsBetween(-n, 0)).alias(f"m{j}_{n}") for j in range(measures) for n in ws]
    return df.select("seller", "day", *cols)


shapes = {
    "all": (args.measures, widths),
    "one": (1, widths),
    "x4": (args.measures, [4 * n + 3 for n in widths]),  # frame width (n + 1) x 4
}
results = []
for shape in args.shapes.split(","):
    m, ws = shapes[shape]
    label = f"{m} measures x n={','.join(map(str, ws))}"
    vanilla = None
    for variant in args.variants.split(","):
        if variant == "vanilla+rule" and args.ansi == "on":
            continue  # the rule leaves ANSI queries untouched
        floor = variant == "spark-floor"
        for k, v in VARIANTS[variant].items():
            spark.conf.set(k, v)
        best = None
        for _ in range(args.repeat):
            known = stage_ids(spark)
            wall, cpu, _, error = timed(spark, lambda: noop_write(query(m, ws, floor)))
            stages = stages_since(spark, known)
            stage = stages[-1]["run_s"] if stages else float("nan")
            if best is None or wall < best[0]:
                best = (wall, stage, cpu, error)
        wall, stage, cpu, error = best
        check = checksum(query(m, ws, floor))
        if variant == "vanilla":
            vanilla = (wall, stage, check)
        same = "n/a" if floor else "yes" if vanilla is None or check == vanilla[2] else "NO"
        speed = f"{vanilla[0] / wall:.1f}x" if vanilla else "-"
        stage_speed = f"{vanilla[1] / stage:.1f}x" if vanilla and stage > 0 else "-"
        results.append(
            [label, variant, f"{wall:.2f}", f"{stage:.2f}", f"{cpu:.1f}", speed, stage_speed, same, error or ""]
        )
        print(f"{label} {variant}: wall {wall:.2f}s window stage {stage:.2f}s rows {check[1]} {error or ''}", flush=True)

print()
table(
    ["shape", "variant", "wall s", "window stage s", "JVM CPU s", "vs vanilla", "stage vs vanilla", "rows equal", "error"],
    results,
)
shutil.rmtree(os.path.dirname(path), ignore_errors=True)
