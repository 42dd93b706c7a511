"""Shared by the benchmarks in dev/bench: timing (wall and JVM CPU), shuffle bytes, result checksums, tables.

In local mode the executors live in the driver JVM, which is this Python process's parent: its CPU time
(/proc/<ppid>/stat) is the query's CPU time, all threads included.
"""
import os
import time

from pyspark.sql import functions as F

P = (1 << 61) - 1
B = 1_000_003


def jvm_cpu_seconds():
    with open(f"/proc/{os.getppid()}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime, stime are fields 14 and 15 of stat (1-based); after the ")" split they are at 11 and 12.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _stage_list(spark):
    """Every stage in Spark's status store (AppStatusStore.stageList has five parameters in Spark 4.1, and py4j
    does not fill in Scala defaults)."""
    sc = spark.sparkContext
    store = sc._jsc.sc().statusStore()
    no_quantiles = sc._gateway.new_array(sc._jvm.double, 0)
    return store.stageList(None, False, False, no_quantiles, None)


def shuffle_write_bytes(spark):
    """Total shuffle bytes written by every stage so far (Spark's status store)."""
    stages = _stage_list(spark)
    total = 0
    for i in range(stages.size()):
        total += stages.apply(i).shuffleWriteBytes()
    return total


def timed(spark, action):
    """Runs action(); returns (wall s, JVM CPU s, shuffle bytes written, error or None)."""
    shuffle0, cpu0, t0 = shuffle_write_bytes(spark), jvm_cpu_seconds(), time.perf_counter()
    error = None
    try:
        action()
    except Exception as e:  # a failed run is a result: report it, go on with the next
        error = str(e).strip().splitlines()[0][:160]
    return time.perf_counter() - t0, jvm_cpu_seconds() - cpu0, shuffle_write_bytes(spark) - shuffle0, error


def noop_write(df):
    df.write.format("noop").mode("overwrite").save()


def _partition_hash(rows):
    h, n = 0, 0
    for (x,) in rows:
        h = (h * B + (x % P)) % P
        n += 1
    yield h, n


def _partition_sum(rows):
    h, n = 0, 0
    for (x,) in rows:
        h = (h + (x % P)) % P
        n += 1
    yield h, n


def checksum_and_plan(df, ordered=False):
    """Checksum of every output row, and the executed plan of the query that computed it (run to the end, so
    adaptive execution has finalized it). Ordered: a polynomial rolling hash of every row's xxhash64 in output
    order, per partition, combined in partition order (independent of how rows are split into partitions).
    Unordered (queries whose row order Spark does not define, e.g. joins and aggregates): the sum of the row
    hashes. Both are combined in Python, so no Spark (or Ember) aggregate takes part in the check."""
    hashed = df.select(F.xxhash64(*[F.col(c) for c in df.columns]).alias("h"))
    total, count = 0, 0
    for h, n in hashed.rdd.mapPartitions(_partition_hash if ordered else _partition_sum).collect():
        total = (total * pow(B, n, P) + h) % P if ordered else (total + h) % P
        count += n
    return (total, count), executed_plan(hashed)


def checksum(df, ordered=False):
    return checksum_and_plan(df, ordered)[0]


def executed_plan(df):
    return df._jdf.queryExecution().executedPlan().toString()


def table(headers, rows):
    """Prints a Markdown table (pasted as is into closing notes and docs)."""
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
    print(line(headers))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in cells:
        print(line(r))
    print(flush=True)


def compare_configs(spark, configs, cases, make_query, case_label, repeat=1):
    """For each case: runs make_query(case) under each (name, conf) of configs — a checksum of every output row,
    then `repeat` timed runs into the no-op sink — and prints whether the rows were identical across the
    configurations; then one table row per run (wall, JVM CPU, shuffle MB, speed relative to the case's first
    run, which is the first configuration's)."""
    results = []
    for case in cases:
        sums = {}
        base_wall = None
        for name, conf in configs:
            for k, v in conf.items():
                spark.conf.set(k, v)
            sums[name] = checksum(make_query(case))
            for r in range(repeat):
                wall, cpu, shuffle, err = timed(spark, lambda: noop_write(make_query(case)))
                if base_wall is None:
                    base_wall = wall
                results.append(
                    [case, name, r, f"{wall:.2f}", f"{cpu:.2f}", f"{shuffle / 1e6:.1f}", f"{base_wall / wall:.2f}x",
                     err or "ok"]
                )
        same = len(set(sums.values())) == 1
        print(f"{case}: rows identical across configurations: {same} ({sums})", flush=True)
        if not same:
            results.append([case, "MISMATCH", "-", "-", "-", "-", "-", str(sums)])
    table([case_label, "config", "run", "wall s", "JVM CPU s", "shuffle MB", "vs vanilla", "status"], results)


def stage_ids(spark):
    """Ids of every stage the status store knows so far (pass to stages_since to find a query's stages)."""
    stages = _stage_list(spark)
    return {stages.apply(i).stageId() for i in range(stages.size())}


def stages_since(spark, known):
    """Stages not in `known` (from stage_ids()), by id: dicts with id, name, tasks, executor run time and
    CPU time in seconds (summed over the stage's tasks: Spark's own stage metrics)."""
    stages = _stage_list(spark)
    out = []
    for i in range(stages.size()):
        s = stages.apply(i)
        if s.stageId() in known:
            continue
        out.append(
            {
                "id": s.stageId(),
                "name": s.name(),
                "tasks": s.numTasks(),
                "run_s": s.executorRunTime() / 1e3,
                "cpu_s": s.executorCpuTime() / 1e9,
            }
        )
    return sorted(out, key=lambda s: s["id"])
