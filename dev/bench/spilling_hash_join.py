"""Shuffled hash join benchmark: vanilla Spark's sort-merge join and shuffled hash join against Ember's native
hash join (EmberSpillingHashJoinExec) with spilling off and on, at several off-heap budgets per task.

    dev/bench/submit.sh spilling_hash_join [--scale 1.0] [--budgets 1024,192,128,64] [--shapes inner,left_outer,...]
                             [--partitions 2] [--max-build-buffer-bytes N (test knob: forces spilling)]

Default: 4M build rows x 20M probe rows (long keys, two payload columns; --scale multiplies both), local[2].
The off-heap pool is fixed per JVM, so this script (the orchestrator) starts one spark-submit per budget with
spark.memory.offHeap.size = 2 x budget (local[2]: two tasks share the pool), each running every shape x variant
(`--budget N` is that inner mode). Shapes: inner, left outer (probe rows preserved), full outer, left anti, and
an inner join where 30% of the probe rows share one key. Reported: wall and JVM CPU seconds, failed runs (with
their first error line), and whether every variant that completed returned the same rows (order-insensitive
checksum of all columns + row count).
"""
import argparse
import json
import os
import subprocess
import sys

SHAPES = ["inner", "left_outer", "full_outer", "left_anti", "inner_hot"]
VARIANTS = ["spark_smj", "spark_shj", "ember_spill_off", "ember_spill_on"]


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--scale", type=float, default=1.0, help="multiplies 4M build and 20M probe rows")
    p.add_argument("--budgets", default="1024,192,128,64", help="off-heap MiB per task")
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--partitions", type=int, default=2, help="shuffle partitions (2: one per core)")
    p.add_argument("--max-build-buffer-bytes", type=int, default=0,
                   help="test knob spark.ember.spillingHashJoin.spill.maxBuildBufferBytes (forces spilling at small scale)")
    p.add_argument("--budget", type=int, default=0, help="(inner mode) run at this budget in this JVM")
    p.add_argument("--conf", action="append", default=[], help="k=v set on the session for every variant")
    return p.parse_args()


def timed(action):
    """(wall s, JVM CPU s, first error line or None) of action(). Not common.timed: its shuffle-bytes probe
    (AppStatusStore.stageList through py4j) does not resolve on Spark 4.1.3, and joins need no shuffle figure."""
    import time
    from common import jvm_cpu_seconds

    cpu0, t0 = jvm_cpu_seconds(), time.perf_counter()
    error = None
    try:
        action()
    except Exception as e:  # a failed run (e.g. out of memory) is a result
        lines = str(e).strip().splitlines() or ["?"]
        # A Py4J error's first line only names the call; the Java exception's own line says what failed.
        memory = ("esources exhausted", "ResourcesExhausted", "OutOfMemory", "Unable to acquire", "spilling is disabled")
        error = next((x.strip() for x in lines if any(m in x for m in memory)),
                     next((x.strip() for x in lines if "Exception:" in x or "Error:" in x), lines[0]))
        # Spark puts the task's own error on the "Job aborted" line, far to the right: show that part.
        at = min((error.find(m) for m in memory if m in error), default=-1)
        error = (error[max(0, at - 60):] if at >= 0 else error)[:160]
    return time.perf_counter() - t0, jvm_cpu_seconds() - cpu0, error


def orchestrate(args):
    from common import table

    results = []
    here = os.path.dirname(os.path.abspath(__file__))
    for budget in [int(b) for b in args.budgets.split(",")]:
        env = dict(os.environ, BENCH_OFFHEAP=f"{2 * budget}m")
        cmd = [os.path.join(here, "submit.sh"), "join", "--budget", str(budget), "--scale", str(args.scale),
               "--shapes", args.shapes, "--variants", args.variants, "--partitions", str(args.partitions),
               "--max-build-buffer-bytes", str(args.max_build_buffer_bytes)]
        cmd += [a for kv in args.conf for a in ("--conf", kv)]
        print(f"budget {budget} MiB/task: {' '.join(cmd[1:])} (BENCH_OFFHEAP={env['BENCH_OFFHEAP']})", flush=True)
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
        got = [json.loads(line[len("RESULT "):]) for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        if proc.returncode != 0 or not got:
            print(proc.stdout[-2000:], file=sys.stderr)
            print(f"budget {budget}: spark-submit exited {proc.returncode}", file=sys.stderr)
        results += got

    build, probe = int(4_000_000 * args.scale), int(20_000_000 * args.scale)
    print(f"\n## Shuffled hash join: {build:,} build x {probe:,} probe rows, local[2], "
          f"{args.partitions} shuffle partitions\n")
    rows = []
    failed = 0
    for r in results:
        base = next((x for x in results if x["shape"] == r["shape"] and x["budget"] == r["budget"]
                     and x["variant"] == "spark_smj" and not x["error"]), None)
        ratio = f"{base['wall'] / r['wall']:.2f}x" if base and not r["error"] and r["wall"] > 0 else "-"
        failed += bool(r["error"])
        rows.append([r["shape"], r["budget"], r["variant"], f"{r['wall']:.1f}", f"{r['cpu']:.1f}", ratio,
                     r["spilled"] if r["spilled"] is not None else "-",
                     "FAILED: " + r["error"] if r["error"] else "ok", r["same"]])
    table(["shape", "MiB/task", "variant", "wall s", "cpu s", "vs SMJ (wall)", "spilled buckets", "status",
           "rows identical"], rows)
    mismatched = [r for r in results if r["same"] == "NO"]
    print(f"{len(results)} runs, {failed} failed, {len(mismatched)} with different rows")
    return 1 if mismatched else 0


def run_budget(args):
    from pyspark.sql import SparkSession, functions as F
    from common import P

    spark = SparkSession.builder.appName(f"ember-join-bench-{args.budget}").getOrCreate()
    spark.conf.set("spark.sql.shuffle.partitions", str(args.partitions))
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    spark.conf.set("spark.sql.adaptive.enabled", "false")  # the planned join is the one measured
    spark.conf.set("spark.ember.spillingHashJoin.spill.maxBuildBufferBytes", str(args.max_build_buffer_bytes))
    for kv in args.conf:
        k, v = kv.split("=", 1)
        spark.conf.set(k, v)
    n_build, n_probe = int(4_000_000 * args.scale), int(20_000_000 * args.scale)
    domain = max(1, n_build * 5 // 4)  # ~80% of the probe keys find a build row

    build = spark.range(0, n_build).select(
        ((F.col("id") * 7919) % n_build).alias("k"), F.col("id").alias("b1"), (F.col("id") * 3).alias("b2"))

    def probe(hot):
        key = (F.col("id") * 104729) % domain
        if hot:
            key = F.when(F.col("id") % 10 < 3, F.lit(42)).otherwise(key)
        return spark.range(0, n_probe).select(key.alias("pk"), F.col("id").alias("p1"), (F.col("id") % 1000).alias("p2"))

    def query(shape, variant):
        shj = variant != "spark_smj"
        b = build.hint("shuffle_hash") if shj else build
        p = probe(shape == "inner_hot")
        jt = {"inner": "inner", "inner_hot": "inner", "left_outer": "left_outer", "full_outer": "full_outer",
              "left_anti": "left_anti"}[shape]
        return p.join(b, F.col("pk") == F.col("k"), jt)

    def configure(variant):
        spark.conf.set("spark.ember.enabled", str(variant.startswith("ember")).lower())
        spark.conf.set("spark.ember.spillingHashJoin.spill.enabled", str(variant == "ember_spill_on").lower())
        spark.conf.set("spark.sql.join.preferSortMergeJoin", str(variant == "spark_smj").lower())

    def spilled_buckets(df):
        """Sum of the native joins' `spilled_buckets` metric in the plan `df` executed; None: no native join."""
        stack, total, found = [df._jdf.queryExecution().executedPlan()], 0, False
        while stack:
            node = stack.pop()
            if node.nodeName().startswith("EmberShuffledHashJoin"):  # nodeName drops "Exec"
                found = True
                total += node.metrics().apply("spilled_buckets").value()
            children = node.children()
            stack += [children.apply(i) for i in range(children.size())]
        return total if found else None

    # Warm-up (class loading, JIT, the native library), not measured: else the first run of a JVM pays for it.
    for variant in ("spark_smj", "ember_spill_on"):
        configure(variant)
        spark.range(0, 100000).select((F.col("id") % 1000).alias("k")).hint("shuffle_hash").join(
            spark.range(0, 100000).select((F.col("id") % 700).alias("pk")), F.col("pk") == F.col("k")).count()

    for shape in args.shapes.split(","):
        results, sums = [], {}
        for variant in args.variants.split(","):
            configure(variant)
            joined = query(shape, variant)
            # Order-insensitive checksum of every column and the row count, computed by Spark: it is the timed action.
            agg = joined.select(F.xxhash64(*[F.col(c) for c in joined.columns]).alias("h")).agg(
                F.sum(F.col("h").cast("decimal(38,0)")).alias("s"), F.count("*").alias("n"))
            out = {}

            def action():
                row = agg.collect()[0]
                out["sum"] = (int(row["s"] or 0) % P, row["n"])

            wall, cpu, error = timed(action)
            if not error:
                sums[variant] = out["sum"]
            results.append({"shape": shape, "budget": args.budget, "variant": variant, "wall": wall, "cpu": cpu,
                            "error": error, "spilled": None if error else spilled_buckets(agg), "same": "-",
                            "rows": out["sum"][1] if not error else None})
        identical = len(set(sums.values())) == 1
        for r in results:
            if not r["error"]:
                r["same"] = "yes" if identical else "NO"
            print("RESULT " + json.dumps(r), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    a = parse()
    sys.exit(run_budget(a) if a.budget else orchestrate(a))
