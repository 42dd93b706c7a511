"""TPC-H: the 22 queries (dev/bench/tpch/q*.sql) on vanilla Spark, Apache DataFusion Comet and Ember, each engine
in its own spark-submit session (Comet's plugin and shuffle manager are fixed at startup).

    dev/.venv/bin/python dev/bench/tpch.py [--sf 1] [--runs 1] [--warmup] [--engines vanilla,comet,ember]
                                           [--queries 1,3,18] [--data DIR] [--out dev/work/tpch-results.json]

`make bench-tpch` (TPCH_SF=1 by default) generates the data with the pinned tpchgen-cli, fetches Comet's jar,
builds Ember's release jar and runs this. Without --engine this process is the driver: for each of `--runs`
rounds it starts one spark-submit per engine (the engines' order rotated every round, so the machine's noise
spreads over all of them), each running every query once (after one untimed run of each with --warmup) and
writing what it saw to a JSON file; then it prints Markdown tables and writes --out.

Per query and engine:
- time: wall time of `collect()` (planning, execution, results to Python), best over the rounds;
- ratio: vanilla's best time / the engine's (> 1 is faster than vanilla);
- rows: the engine's rows equal vanilla's, compared exactly as sorted lists (decimals as their exact decimal
  string, scale included; doubles by repr, which round-trips);
- native share: native operators / all operators of the executed plan (see plan_share).
"""
import argparse
import decimal
import hashlib
import json
import math
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUERY_DIR = os.path.join(ROOT, "dev", "bench", "tpch")
TABLES = ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"]
ENGINES = ["vanilla", "comet", "ember", "vanilla-bf", "comet-df", "ember-df", "ember-text"]
# Variants: an engine with its dynamic (runtime) join filters switched on (keys as each engine defines them;
# vanilla Spark's runtime bloom filter is on by default); Ember reading every string as UTF-8 (on demand only).
VARIANT_CONFS = {
    # Ember with every string as UTF-8 (no plan carrying strings as bytes): the A/B of that choice.
    "ember-text": ["spark.ember.strings.asBytes.enabled=false"],
    # Spark's runtime bloom filter is injected only above a 10 GB application side by default.
    "vanilla-bf": ["spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold=1MB"],
    "comet-df": ["spark.comet.exec.join.dynamicFilter.enabled=true"],
    "ember-df": ["spark.ember.dynamicFilter.enabled=true"],
}


def base_engine(e):
    return e.split("-")[0]
COMET_VERSION = "1.2.0"
COMET_JAR = os.path.join(ROOT, "dev", "work", f"comet-spark-spark4.1_2.13-{COMET_VERSION}.jar")
EMBER_JAR = os.path.join(ROOT, "spark", "target", "ember-spark-0.1.0-SNAPSHOT.jar")
# Row counts of the qualification answers at SF 1 (TPC-H specification, appendix C): a check of the queries.
SF1_ROWS = {1: 4, 2: 100, 3: 10, 4: 5, 5: 5, 6: 1, 7: 4, 8: 2, 9: 175, 10: 20, 11: 1048, 12: 2, 13: 42, 14: 1,
            15: 1, 16: 18314, 17: 1, 18: 57, 19: 1, 20: 186, 21: 100, 22: 7}

# Nodes that only wrap or adapt others: neither native nor Spark operators (see plan_share).
WRAPPERS = {
    "AdaptiveSparkPlanExec", "ShuffleQueryStageExec", "BroadcastQueryStageExec", "TableCacheQueryStageExec",
    "ResultQueryStageExec", "AQEShuffleReadExec", "ReusedExchangeExec", "ReusedSubqueryExec", "SubqueryExec", "SubqueryBroadcastExec",
    "SubqueryAdaptiveBroadcastExec", "WholeStageCodegenExec", "InputAdapter", "CometSubqueryBroadcastExec",
}


def is_transition(name):
    return "ColumnarToRow" in name or "ToColumnar" in name or name in ("EmberInputExec", "CometSinkPlaceHolder")


def query_text(n, sf="1", query_dir=QUERY_DIR):
    with open(os.path.join(query_dir, f"q{n}.sql")) as f:
        text = "\n".join(l for l in f.read().splitlines() if not l.lstrip().startswith("--"))
    if n == 11 and query_dir == QUERY_DIR:
        # The specification's FRACTION is 0.0001 / SF (2.4.11.3): unscaled, Q11 returns no row from SF 10 on.
        text = text.replace("* 0.0001", f"* {format(decimal.Decimal('0.0001') / decimal.Decimal(sf), 'f')}")
    return text


# ---------------------------------------------------------------------------------------------------------------
# One engine's session (run under spark-submit with --engine).


def _seq(s):
    return [s.apply(i) for i in range(s.size())]


def plan_nodes(plan):
    """(class simple name, node, parent's simple name) of every node: through adaptive plans, query stages and
    subqueries (Spark's own AdaptiveSparkPlanHelper.collectWithSubqueries walk)."""
    out, stack = [], [(plan, None)]
    while stack:
        p, parent = stack.pop()
        name = p.getClass().getSimpleName()
        out.append((name, p, parent))
        if name == "AdaptiveSparkPlanExec":
            kids = [p.executedPlan()]
        elif name.endswith("QueryStageExec"):
            kids = [p.plan()]
        else:
            kids = _seq(p.children())
        kids += _seq(p.subqueries())
        stack.extend((k, name) for k in kids)
    return out


def plan_share(engine, plan):
    """Native operators / all operators of the executed plan (final, after adaptive execution). Not counted at
    all: wrappers (adaptive plan, query stages and AQE's reads of their shuffle partitions, reused exchanges and
    subqueries, whole-stage codegen and its input adapters) and row/columnar transitions (Spark's ColumnarToRow/RowToColumnar, EmberColumnarToRowExec and
    EmberInputExec, Comet's ColumnarToRow and SparkToColumnar nodes). Native: Ember: Ember* nodes, plus a file
    scan under EmberInputExec whose Parquet is read natively and a cached table's scan it reads natively; Comet: Comet* nodes (its scans included). Every
    other node is a Spark operator. Returns (native, total, sorted distinct Spark operator names)."""
    nodes = plan_nodes(plan)
    native, spark_ops = 0, []
    for name, node, parent in nodes:
        if name in WRAPPERS or is_transition(name):
            continue
        if engine == "ember" and name.startswith("Ember"):
            native += 1
        elif engine == "comet" and name.startswith("Comet"):
            native += 1
        elif engine == "ember" and parent == "EmberInputExec" and name == "FileSourceScanExec" and \
                _read_natively(nodes, node):
            native += 1
        elif engine == "ember" and name == "InMemoryTableScanExec" and _cached_natively(nodes, node):
            native += 1
        else:
            spark_ops.append(name)
    return native, native + len(spark_ops), sorted(set(spark_ops))


def _read_natively(nodes, scan):
    """Whether the EmberInputExec above `scan` reads its Parquet natively (its explain string says so)."""
    for name, node, _ in nodes:
        if name == "EmberInputExec" and node.child().equals(scan):
            return "Parquet read natively" in node.simpleString(25)
    return False


def _cached_natively(nodes, scan):
    """Whether an EmberInputExec reads the cached table's `scan` (directly or through AQE's table-cache stage)
    natively (its explain string says so)."""
    for name, node, _ in nodes:
        if name == "EmberInputExec":
            child = node.child()
            if child.getClass().getSimpleName() == "TableCacheQueryStageExec":
                child = child.plan()
            if child.equals(scan):
                return "cached table read natively" in node.simpleString(25)
    return False


def canonical(v):
    import datetime
    import decimal

    if v is None:
        return "null"
    if isinstance(v, decimal.Decimal):
        return "dec:" + str(v)
    if isinstance(v, float):
        return "f:" + repr(v)
    if isinstance(v, (datetime.date, datetime.datetime)):
        return "t:" + v.isoformat()
    return f"{type(v).__name__}:{v}"


def query_io(spark, before, engine, plan):
    """A query's input and shuffle figures, from the stages it ran (Spark's status store): input bytes and
    records, shuffle bytes written; shuffle rows: records written, except Ember's, whose records are blocks —
    its exchanges' own row counts (`shuffle_rows`) instead."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from common import _stage_list
    stages = _stage_list(spark)
    inp = inrows = sh_bytes = sh_records = 0
    for i in range(stages.size()):
        s = stages.apply(i)
        if s.stageId() in before:
            continue
        inp += s.inputBytes()
        inrows += s.inputRecords()
        sh_bytes += s.shuffleWriteBytes()
        sh_records += s.shuffleWriteRecords()
    if engine == "ember":
        sh_records = 0
        for name, node, _ in plan_nodes(plan):
            if name == "EmberShuffleExchangeExec":
                m = node.metrics().get("shuffle_rows")
                if m.isDefined():
                    sh_records += m.get().value()
    return {"input_mb": inp / 1e6, "input_rows": inrows, "shuffle_mb": sh_bytes / 1e6, "shuffle_rows": sh_records}


def stage_ids(spark):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from common import stage_ids as ids
    return ids(spark)


def run_session(args):
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName(f"ember-bench-tpch-{args.engine}").getOrCreate()
    jvm = spark.sparkContext._jvm
    settings = {}
    if base_engine(args.engine) == "comet":
        # The keys as Comet's own CometConf defines them, with the values this session resolved.
        conf = jvm.org.apache.spark.sql.internal.SQLConf.get()
        for field in ["COMET_ENABLED", "COMET_EXEC_ENABLED", "COMET_SHUFFLE_ENABLED", "COMET_SHUFFLE_MODE",
                      "COMET_NATIVE_SCAN_ENABLED", "COMET_ONHEAP_ENABLED", "COMET_EXEC_JOIN_DYNAMIC_FILTER_ENABLED"]:
            entry = getattr(jvm.org.apache.comet.CometConf, field)()
            settings[entry.key()] = str(entry.get(conf))
        settings["spark.shuffle.manager"] = spark.conf.get("spark.shuffle.manager")
    elif base_engine(args.engine) == "ember":
        for key in ["spark.ember.enabled", "spark.ember.dynamicFilter.enabled"]:
            settings[key] = spark.conf.get(key, "(default)")
    else:
        for key in ["spark.sql.optimizer.runtime.bloomFilter.enabled",
                    "spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold"]:
            settings[key] = spark.conf.get(key)
    print(f"# tpch {args.engine}: {settings}", flush=True)
    for t in args.tables.split(","):
        spark.read.parquet(os.path.join(args.data, f"{t}.parquet")).createOrReplaceTempView(t)
    # A query set's setup.sql (e.g. CACHE TABLE): run once per session, before any timing.
    setup = os.path.join(args.query_dir, "setup.sql")
    if os.path.exists(setup):
        with open(setup) as f:
            for statement in (s.strip() for s in f.read().split(";")):
                if statement and not all(l.strip().startswith("--") for l in statement.splitlines()):
                    spark.sql(statement).collect()

    queries = [int(q) for q in args.queries.split(",")]
    if args.warmup:
        for n in queries:
            try:
                spark.sql(query_text(n, args.sf, args.query_dir)).collect()
            except Exception:
                pass
    results = {}
    for n in queries:
        before = stage_ids(spark)
        df = spark.sql(query_text(n, args.sf, args.query_dir))
        t0 = time.perf_counter()
        error = None
        try:
            rows = df.collect()
        except Exception as e:  # a failed query is a result: report it, go on
            rows, error = [], str(e).strip().splitlines()[0][:200]
        wall = time.perf_counter() - t0
        canon = sorted("|".join(canonical(v) for v in r) for r in rows)
        native, total, spark_ops = plan_share(base_engine(args.engine), df._jdf.queryExecution().executedPlan())
        io = query_io(spark, before, base_engine(args.engine), df._jdf.queryExecution().executedPlan())
        results[n] = {
            "wall_s": wall,
            "rows": len(rows),
            "rows_sha256": hashlib.sha256("\n".join(canon).encode()).hexdigest(),
            "native": native,
            "operators": total,
            "spark_operators": spark_ops,
            "error": error,
            **io,
        }
        print(f"q{n}: {wall:.2f}s rows={len(rows)} native={native}/{total} {error or ''}", flush=True)
        if args.rows_dir:
            os.makedirs(args.rows_dir, exist_ok=True)
            with open(os.path.join(args.rows_dir, f"q{n}.txt"), "w") as f:
                f.write("\n".join(canon) + "\n")
    with open(args.session_out, "w") as f:
        json.dump({"engine": args.engine, "settings": settings, "results": results, "sf": args.sf,
                   "queries": args.queries, "query_dir": args.query_dir, "warmup": args.warmup,
                   "time_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}, f)
    spark.stop()


# ---------------------------------------------------------------------------------------------------------------
# The driver: one spark-submit per engine and round, then the tables.


def submit_command(engine, args, session_out, rows_dir):
    venv_bin = os.path.join(ROOT, "dev", ".venv", "bin")
    cmd = [
        os.path.join(venv_bin, "spark-submit"),
        "--master", f"local[{args.cores}]",
        "--driver-memory", args.driver_memory,
        "--conf", "spark.memory.offHeap.enabled=true",
        "--conf", f"spark.memory.offHeap.size={args.offheap}",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.driver.extraJavaOptions=-Dlog4j2.level=warn",
    ]
    if base_engine(engine) == "comet":
        cmd += [
            "--jars", COMET_JAR,
            # The shuffle manager is created with the SparkEnv, before --jars reach the class loader.
            "--conf", f"spark.driver.extraClassPath={COMET_JAR}",
            "--conf", "spark.plugins=org.apache.spark.CometPlugin",
            "--conf", "spark.shuffle.manager=org.apache.spark.sql.comet.execution.shuffle.CometShuffleManager",
            "--conf", "spark.comet.enabled=true",
            "--conf", "spark.comet.exec.enabled=true",
            "--conf", "spark.comet.shuffle.enabled=true",
        ]
    elif base_engine(engine) == "ember":
        cmd += ["--jars", EMBER_JAR, "--conf", "spark.plugins=org.ember.EmberPlugin"]
    for kv in VARIANT_CONFS.get(engine, []) + args.conf:
        cmd += ["--conf", kv]
    cmd += [os.path.abspath(__file__), "--engine", engine, "--sf", args.sf, "--data", args.data, "--tables", args.tables,
            "--queries", args.queries, "--query-dir", args.query_dir,
            "--session-out", session_out, "--rows-dir", rows_dir]
    if args.warmup:
        cmd.append("--warmup")
    return cmd


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def table(headers, rows):
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
    out = [line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in cells]
    print("\n".join(out) + "\n", flush=True)


def drive(args):
    engines = args.engines.split(",")
    for e in engines:
        if e not in ENGINES:
            sys.exit(f"unknown engine {e}: one of {ENGINES}")
    if any(base_engine(e) == "comet" for e in engines) and not os.path.exists(COMET_JAR):
        sys.exit(f"no Comet jar at {COMET_JAR}: run make bench-tpch (it downloads it)")
    if any(base_engine(e) == "ember" for e in engines) and not os.path.exists(EMBER_JAR):
        sys.exit(f"no Ember jar at {EMBER_JAR}: run make jar")
    for t in args.tables.split(","):
        if not os.path.exists(os.path.join(args.data, f"{t}.parquet")):
            sys.exit(f"no {t}.parquet in {args.data}: generate it with tpchgen-cli (make bench-tpch does)")
    work = os.path.join(ROOT, "dev", "work", "tpch-runs")
    os.makedirs(work, exist_ok=True)
    sessions = {e: [] for e in engines}
    # As dev/bench/submit.sh: spark-submit and its Python from the venv.
    venv_bin = os.path.join(ROOT, "dev", ".venv", "bin")
    env = dict(os.environ, PATH=venv_bin + os.pathsep + os.environ.get("PATH", ""),
               PYSPARK_PYTHON=os.path.join(venv_bin, "python"))
    for r in range(args.runs):
        order = engines[r % len(engines):] + engines[:r % len(engines)]
        for e in order:
            out = os.path.join(work, f"{e}-{r}.json")
            if e in args.reuse.split(","):
                # An earlier session's results (same scale factor and queries), e.g. to time only a rebuilt Ember.
                with open(out) as f:
                    s = json.load(f)
                if (s.get("sf") != args.sf or s.get("queries") != args.queries or s.get("warmup") != args.warmup
                        or s.get("query_dir", QUERY_DIR) != args.query_dir):
                    sys.exit(f"{out} is from another configuration: run {e} again")
                print(f"== round {r + 1}/{args.runs}: {e}, reused from {s['time_utc']}", flush=True)
                sessions[e].append(s)
                continue
            print(f"== round {r + 1}/{args.runs}: {e}", flush=True)
            subprocess.run(submit_command(e, args, out, os.path.join(work, f"rows-{e}")), check=True, env=env)
            with open(out) as f:
                sessions[e].append(json.load(f))
    report(args, engines, sessions)


def report(args, engines, sessions):
    queries = [int(q) for q in args.queries.split(",")]
    best = {}  # engine -> q -> result with the best time
    for e in engines:
        best[e] = {}
        for n in queries:
            runs = [s["results"][str(n)] for s in sessions[e]]
            ok = [x for x in runs if not x["error"]]
            best[e][n] = dict(min(ok, key=lambda x: x["wall_s"]) if ok else runs[0])
            # Every run of an engine must give the same rows.
            best[e][n]["stable"] = len({x["rows_sha256"] for x in runs}) == 1
    base = "vanilla" if "vanilla" in engines else None
    failures = []
    rows_out, summary = [], []
    for n in queries:
        row = [f"q{n}"]
        for e in engines:
            x = best[e][n]
            if x["error"]:
                row += ["error", "-", "-"]
                failures.append(f"q{n} {e}: {x['error']}")
                continue
            ratio = best[base][n]["wall_s"] / x["wall_s"] if base and not best[base][n]["error"] else None
            same = base is None or x["rows_sha256"] == best[base][n]["rows_sha256"]
            if not same or not x["stable"]:
                failures.append(f"q{n} {e}: rows differ from vanilla's (dev/work/tpch-runs/rows-{e}/q{n}.txt)")
            share = f"{x['native']}/{x['operators']}" if base_engine(e) != "vanilla" else "-"
            row += [f"{x['wall_s']:.2f}", f"{ratio:.2f}x" if ratio else "-",
                    ("yes" if same and x["stable"] else "NO") if e != base else str(x["rows"])]
            if base_engine(e) != "vanilla":
                row.append(share)
        if args.sf == "1" and args.query_dir == QUERY_DIR and base and best[base][n]["rows"] != SF1_ROWS[n]:
            failures.append(f"q{n}: vanilla returned {best[base][n]['rows']} rows, the spec's answer has {SF1_ROWS[n]}")
        rows_out.append(row)
    headers = ["query"]
    for e in engines:
        headers += [f"{e} s", f"{e} vs vanilla", f"{e} rows" if e == base else f"{e} rows equal"]
        if base_engine(e) != "vanilla":
            headers.append(f"{e} native ops")
    print(f"# TPC-H SF{args.sf}: best of {args.runs} run(s){' after a warm-up' if args.warmup else ''}, "
          f"local[{args.cores}], off-heap {args.offheap}\n")
    table(headers, rows_out)
    for e in engines:
        if e == base:
            continue
        ok = [n for n in queries if not best[e][n]["error"] and not best[base or e][n]["error"]]
        ratios = [best[base][n]["wall_s"] / best[e][n]["wall_s"] for n in ok] if base else []
        nat = sum(best[e][n]["native"] for n in ok)
        tot = sum(best[e][n]["operators"] for n in ok)
        share = f"{nat}/{tot} ({100 * nat / max(tot, 1):.0f}%)" if base_engine(e) != "vanilla" else "-"
        summary.append([e, f"{geomean(ratios):.2f}x" if ratios else "-",
                        f"{sum(best[e][n]['wall_s'] for n in ok):.1f}", share,
                        f"{len(ok)}/{len(queries)}"])
    if base:
        summary.insert(0, [base, "1.00x", f"{sum(best[base][n]['wall_s'] for n in queries if not best[base][n]['error']):.1f}",
                           "-", f"{sum(1 for n in queries if not best[base][n]['error'])}/{len(queries)}"])
    table(["engine", "geomean speedup vs vanilla", "total s", "native operators", "queries run"], summary)
    for e in engines:
        if base_engine(e) == "vanilla":
            continue
        left = [[f"q{n}", ", ".join(best[e][n]["spark_operators"]) or "(none)"] for n in queries]
        print(f"Spark operators left in {e}'s plans:\n")
        table(["query", "Spark operators"], left)
    # The plugins must really have run: every query's plan has native operators.
    for e in engines:
        if base_engine(e) != "vanilla":
            empty = [f"q{n}" for n in queries if not best[e][n]["error"] and best[e][n]["native"] == 0]
            if empty:
                failures.append(f"{e}: no native operator in the plans of {', '.join(empty)} — is the plugin on?")
    if args.io:
        io_rows = []
        for n in queries:
            for e in engines:
                x = best[e][n]
                io_rows.append([f"q{n}", e, f"{x['wall_s']:.2f}", f"{x.get('input_mb', 0):.1f}",
                                f"{x.get('input_rows', 0):,}", f"{x.get('shuffle_rows', 0):,}",
                                f"{x.get('shuffle_mb', 0):.1f}"])
        print("Input and shuffle per query (Spark's stage metrics; shuffle rows: Ember's exchanges' own count, "
              "its shuffle records being blocks):\n")
        table(["query", "engine", "s", "input MB", "input rows", "shuffle rows", "shuffle MB"], io_rows)
    result = {
        "sf": args.sf, "runs": args.runs, "warmup": args.warmup, "cores": args.cores, "offheap": args.offheap,
        "time_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "settings": {e: sessions[e][0]["settings"] for e in engines},
        "sessions_utc": {e: [x.get("time_utc") for x in sessions[e]] for e in engines},
        "best": {e: {f"q{n}": best[e][n] for n in queries} for e in engines},
        "summary": summary, "failures": failures,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"results: {args.out}")
    if failures:
        print("FAILURES:\n  " + "\n  ".join(failures), file=sys.stderr)
        sys.exit(1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--engine", choices=ENGINES, help="run one engine's session (under spark-submit)")
    p.add_argument("--engines", default=",".join(e for e in ENGINES if e != "ember-text"))
    p.add_argument("--sf", default=os.environ.get("TPCH_SF", "1"))
    p.add_argument("--data", help="directory of <table>.parquet files (default dev/work/tpch/sf<SF>)")
    p.add_argument("--queries", default=",".join(str(i) for i in range(1, 23)))
    p.add_argument("--query-dir", default=QUERY_DIR, help="directory of q<N>.sql over the TPC-H tables: "
                   "dev/bench/tpch (the 22 queries, default) or another set, e.g. dev/bench/grouping")
    p.add_argument("--runs", type=int, default=1, help="rounds; each query's time is the best over them")
    p.add_argument("--warmup", action="store_true", help="one untimed run of every query first, per session")
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--driver-memory", default="8g")
    p.add_argument("--offheap", default="4g", help="spark.memory.offHeap.size, the same for every engine")
    p.add_argument("--reuse", default="", help="engines whose sessions of the last run (dev/work/tpch-runs) are "
                   "reused instead of run again, e.g. vanilla,comet")
    p.add_argument("--conf", action="append", default=[], help="k=v passed to every engine's session")
    p.add_argument("--tables", default=",".join(TABLES), help="tables <name>.parquet under --data to register")
    p.add_argument("--io", action="store_true", help="also print each query's input and shuffle figures")
    p.add_argument("--out", default=os.path.join(ROOT, "dev", "work", "tpch-results.json"))
    p.add_argument("--session-out")
    p.add_argument("--rows-dir")
    args = p.parse_args()
    args.query_dir = os.path.abspath(args.query_dir)
    args.data = os.path.abspath(args.data or os.path.join(ROOT, "dev", "work", "tpch", f"sf{args.sf}"))
    if args.engine:
        run_session(args)
    else:
        drive(args)


if __name__ == "__main__":
    main()
