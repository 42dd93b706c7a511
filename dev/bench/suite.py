"""The query-suite runner shared by tpch.py and tpcds.py: a set of SQL statements over Parquet tables on vanilla
Spark, Apache DataFusion Comet and Ember, each engine in its own spark-submit session (Comet's plugin and shuffle
manager are fixed at startup), the engines' order rotated every round, then Markdown tables and a JSON file.

A benchmark is a `Suite` (its tables, statements and their text, its own options and checks); `main(suite)` is
its entry point, both for the driver (no --engine) and for one engine's session (--engine, under spark-submit).

Per statement and engine:
- time: wall time of `collect()` (planning, execution, results to Python), best over the rounds;
- ratio: vanilla's best time / the engine's (> 1 is faster than vanilla);
- rows: the engine's rows equal vanilla's, compared exactly as sorted lists (decimals as their exact decimal
  string, scale included; doubles by repr, which round-trips): `yes`; `ties` where the statement ends in
  ORDER BY … LIMIT n over output columns, both returned n rows and the rows differ only among those whose
  ORDER BY keys equal the last row's (the rows the limit cuts through, which Spark picks by plan); else `DIFF`;
- native share: native operators / all operators of the executed plan (see plan_share), and the Spark operators
  left in it;
- an error (the statement failed in that engine): its error class and first line; the run goes on.
"""
import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import _stage_list, stage_ids, table  # noqa: E402  (dev/bench/common.py)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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
COMET_VERSION = "1.2.0"
COMET_JAR = os.path.join(ROOT, "dev", "work", f"comet-spark-spark4.1_2.13-{COMET_VERSION}.jar")
EMBER_JAR = os.environ.get("EMBER_JAR") or os.path.join(ROOT, "spark", "target", "ember-spark-0.1.0-SNAPSHOT.jar")

# Nodes that only wrap or adapt others: neither native nor Spark operators (see plan_share).
WRAPPERS = {
    "AdaptiveSparkPlanExec", "ShuffleQueryStageExec", "BroadcastQueryStageExec", "TableCacheQueryStageExec",
    "ResultQueryStageExec", "AQEShuffleReadExec", "ReusedExchangeExec", "ReusedSubqueryExec", "SubqueryExec",
    "SubqueryBroadcastExec", "SubqueryAdaptiveBroadcastExec", "WholeStageCodegenExec", "InputAdapter",
    "CometSubqueryBroadcastExec",
}


def base_engine(e):
    return e.split("-")[0]


class Suite:
    """What a benchmark defines; the runner does the rest. Statement ids are strings (e.g. "1", "q14a")."""

    name = "suite"  # dev/work/<name>-runs, dev/work/<name>-results.json
    title = "Suite"
    sf_env = "SF"  # the environment variable giving --sf's default
    tables = []  # <table>.parquet under --data, registered as temporary views
    data_hint = "generate it"

    def add_arguments(self, p):
        """The suite's own options."""

    def prepare(self, args):
        """Resolves the suite's own options (in the driver and in every session)."""

    def statements(self, args):
        """Every statement id, in order (--queries' default)."""
        raise NotImplementedError

    def label(self, sid):
        return sid

    def text(self, args, sid):
        raise NotImplementedError

    def source(self, args):
        """Where the statements come from: sessions of another source are not reused."""
        return None

    def session_args(self, args):
        """The suite's own options, as passed on to each session."""
        return []

    def setup(self, spark, args):
        """Runs once per session after the tables are registered, before any timing."""

    def checks(self, args, best, base, sids):
        """Further failures, from the best results (engine -> id -> result)."""
        return []


def is_transition(name):
    return "ColumnarToRow" in name or "ToColumnar" in name or name in ("EmberInputExec", "CometSinkPlaceHolder")


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
    subqueries, whole-stage codegen and its input adapters) and row/columnar transitions (Spark's
    ColumnarToRow/RowToColumnar, EmberColumnarToRowExec and EmberInputExec, Comet's ColumnarToRow and
    SparkToColumnar nodes). Native: Ember: Ember* nodes, plus a file scan under EmberInputExec whose Parquet is
    read natively and a cached table's scan it reads natively; Comet: Comet* nodes (its scans included). Every
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


def sha256(lines):
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def order_limit(df):
    """(n, output column indices of the ORDER BY keys) when the statement ends in ORDER BY … LIMIT n and every
    key is an output column (the optimized plan: Sort under GlobalLimit, through projections); else None."""
    plan = df._jdf.queryExecution().optimizedPlan()
    output = [a.exprId().id() for a in _seq(plan.output())]
    node, limit = plan, None
    while True:
        name = node.getClass().getSimpleName()
        if name == "GlobalLimit" and limit is None:
            limit = node.maxRows().get()
        elif name == "Sort" and limit is not None:
            break
        elif name not in ("LocalLimit", "Project"):
            return None
        node = node.child()
    keys = []
    for order in _seq(node.order()):
        key = order.child()
        if key.getClass().getSimpleName() != "AttributeReference" or key.exprId().id() not in output:
            return None
        keys.append(output.index(key.exprId().id()))
    return limit, keys


def ties_digest(rows, ordered):
    """What `rows_match` needs to tell rows that differ only where the limit cuts through ties: the last row's
    ORDER BY keys (the boundary), and digests of every row's keys and of the rows not at the boundary."""
    if ordered is None or not rows:
        return None
    limit, keys = ordered
    key_of = lambda r: "|".join(canonical(r[i]) for i in keys)
    boundary = key_of(rows[-1])
    outside = sorted("|".join(canonical(v) for v in r) for r in rows if key_of(r) != boundary)
    return {"limit": limit, "keys": keys, "boundary": boundary, "keys_sha256": sha256(sorted(map(key_of, rows))),
            "outside_sha256": sha256(outside)}


def rows_match(x, ref):
    """`yes` (the same rows), `ties` (they differ only among the rows whose ORDER BY keys tie at the LIMIT) or
    `DIFF`, comparing one result with a reference one."""
    if x["rows_sha256"] == ref["rows_sha256"]:
        return "yes"
    t, r = x.get("ties"), ref.get("ties")
    if t and r and x["rows"] == ref["rows"] == t["limit"] and \
            all(t[k] == r[k] for k in ("keys", "boundary", "keys_sha256", "outside_sha256")):
        return "ties"
    return "DIFF"


def error_of(e):
    """(error class, first line) of a failed statement: Spark's error condition where it has one; for an
    exception py4j wraps (e.g. a task's failure), its root cause's class and message."""
    first = (str(e).strip().splitlines() or [""])[0]
    cls = None
    try:
        cls = e.getCondition()
    except Exception:
        pass
    java = getattr(e, "java_exception", None)
    if java is not None:
        root = java
        while root.getCause() is not None and not root.getCause().equals(root):
            root = root.getCause()
        try:
            cls = root.getCondition()
        except Exception:
            pass
        lines = [l.strip() for l in str(root.getMessage() or "").strip().splitlines()] or [""]
        # Spark's errors say it all on their first line (the SQL context follows); others, e.g. Ember's native
        # errors, may go on over several (which join columns are missing): those are kept, up to 200 characters.
        first = lines[0] if cls else " ".join(l for l in lines if l)
        cls = cls or root.getClass().getSimpleName()
    return cls or type(e).__name__, first[:200]


def query_io(spark, before, engine, plan):
    """A query's input and shuffle figures, from the stages it ran (Spark's status store): input bytes and
    records, shuffle bytes written; shuffle rows: records written, except Ember's, whose records are blocks —
    its exchanges' own row counts (`shuffle_rows`) instead."""
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
    if engine == "ember" and plan is not None:
        sh_records = 0
        for name, node, _ in plan_nodes(plan):
            if name == "EmberShuffleExchangeExec":
                m = node.metrics().get("shuffle_rows")
                if m.isDefined():
                    sh_records += m.get().value()
    return {"input_mb": inp / 1e6, "input_rows": inrows, "shuffle_mb": sh_bytes / 1e6, "shuffle_rows": sh_records}


def engine_settings(spark, engine):
    """The settings that tell the engines apart, as this session resolved them."""
    jvm = spark.sparkContext._jvm
    settings = {}
    if base_engine(engine) == "comet":
        # The keys as Comet's own CometConf defines them, with the values this session resolved.
        conf = jvm.org.apache.spark.sql.internal.SQLConf.get()
        for field in ["COMET_ENABLED", "COMET_EXEC_ENABLED", "COMET_SHUFFLE_ENABLED", "COMET_SHUFFLE_MODE",
                      "COMET_NATIVE_SCAN_ENABLED", "COMET_ONHEAP_ENABLED", "COMET_EXEC_JOIN_DYNAMIC_FILTER_ENABLED"]:
            entry = getattr(jvm.org.apache.comet.CometConf, field)()
            settings[entry.key()] = str(entry.get(conf))
        settings["spark.shuffle.manager"] = spark.conf.get("spark.shuffle.manager")
    elif base_engine(engine) == "ember":
        for key in ["spark.ember.enabled", "spark.ember.dynamicFilter.enabled"]:
            settings[key] = spark.conf.get(key, "(default)")
    else:
        for key in ["spark.sql.optimizer.runtime.bloomFilter.enabled",
                    "spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold"]:
            settings[key] = spark.conf.get(key)
    return settings


def run_statement(spark, suite, args, sid):
    """Runs one statement, timed; returns its result (see the module's docstring) and its sorted rows."""
    engine = base_engine(args.engine)
    before = stage_ids(spark)
    t0 = time.perf_counter()
    df, rows, error, error_class = None, [], None, None
    try:
        df = spark.sql(suite.text(args, sid))
        t0 = time.perf_counter()
        rows = df.collect()
    except Exception as e:  # a failed statement is a result: report it, go on
        error_class, error = error_of(e)
    wall = time.perf_counter() - t0
    canon = sorted("|".join(canonical(v) for v in r) for r in rows)
    plan = df._jdf.queryExecution().executedPlan() if df is not None else None
    native, total, spark_ops = plan_share(engine, plan) if plan is not None else (0, 0, [])
    result = {
        "wall_s": wall,
        "rows": len(rows),
        "rows_sha256": sha256(canon),
        "ties": None if error else ties_digest(rows, order_limit(df)),
        "native": native,
        "operators": total,
        "spark_operators": spark_ops,
        "error": error,
        "error_class": error_class,
        **query_io(spark, before, engine, plan),
    }
    return result, canon


def run_session(suite, args):
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName(f"ember-bench-{suite.name}-{args.engine}").getOrCreate()
    settings = engine_settings(spark, args.engine)
    print(f"# {suite.name} {args.engine}: {settings}", flush=True)
    for t in args.tables.split(","):
        spark.read.parquet(os.path.join(args.data, f"{t}.parquet")).createOrReplaceTempView(t)
    suite.setup(spark, args)

    sids = args.queries.split(",")
    session = {"engine": args.engine, "settings": settings, "results": {}, "sf": args.sf, "queries": args.queries,
               "source": suite.source(args), "warmup": args.warmup, "running": None,
               "time_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}

    def write(running):
        # Before every statement: if the JVM dies, the driver keeps what ran and knows which statement it was.
        session["running"] = running
        with open(args.session_out, "w") as f:
            json.dump(session, f)

    if args.warmup:
        for sid in sids:
            write(sid)
            try:
                spark.sql(suite.text(args, sid)).collect()
            except Exception:
                pass
    for sid in sids:
        write(sid)
        result, canon = run_statement(spark, suite, args, sid)
        session["results"][sid] = result
        print(f"{suite.label(sid)}: {result['wall_s']:.2f}s rows={result['rows']} "
              f"native={result['native']}/{result['operators']} {result['error'] or ''}", flush=True)
        if args.rows_dir:
            os.makedirs(args.rows_dir, exist_ok=True)
            with open(os.path.join(args.rows_dir, f"{suite.label(sid)}.txt"), "w") as f:
                f.write("\n".join(canon) + "\n")
    write(None)
    spark.stop()


# ---------------------------------------------------------------------------------------------------------------
# The driver: one spark-submit per engine and round, then the tables.


def submit_command(suite, engine, args, sids, session_out, rows_dir):
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
    cmd += [os.path.abspath(sys.argv[0]), "--engine", engine, "--sf", args.sf, "--data", args.data,
            "--tables", args.tables, "--queries", ",".join(sids), "--session-out", session_out,
            "--rows-dir", rows_dir] + suite.session_args(args)
    if args.warmup:
        cmd.append("--warmup")
    return cmd


def run_engine(suite, args, engine, out, env):
    """One engine's session over every statement. If its JVM dies (e.g. a native crash), what it had done is
    kept, the statement it was running is recorded as failed and a new session goes on with the rest."""
    sids = args.queries.split(",")
    session = None
    while True:
        part = out + ".part"
        if os.path.exists(part):
            os.remove(part)
        rows_dir = os.path.join(os.path.dirname(out), f"rows-{engine}")
        rc = subprocess.run(submit_command(suite, engine, args, sids, part, rows_dir), env=env).returncode
        s = None
        if os.path.exists(part):
            with open(part) as f:
                s = json.load(f)
        if s is not None and s["running"] is None and set(s["results"]) >= set(sids):
            done = s["results"]
        elif s is None or s["running"] is None:
            sys.exit(f"{engine}'s session exited with status {rc} outside any statement")
        else:
            died = s["running"]
            print(f"!! {engine}: the session exited with status {rc} during {suite.label(died)}", flush=True)
            done = dict(s["results"])
            done[died] = {
                "wall_s": 0.0, "rows": 0, "rows_sha256": "", "ties": None, "native": 0, "operators": 0,
                "spark_operators": [], "error": f"the session exited with status {rc} during this statement",
                "error_class": "SESSION_DIED"}
        if session is None:
            session = dict(s, queries=args.queries, results={}, running=None)
        session["results"].update(done)
        sids = [sid for sid in sids if sid not in done]
        if not sids:
            break
    with open(out, "w") as f:
        json.dump(session, f)
    return session


def drive(suite, args):
    engines = args.engines.split(",")
    for e in engines:
        if e not in ENGINES:
            sys.exit(f"unknown engine {e}: one of {ENGINES}")
    if any(base_engine(e) == "comet" for e in engines) and not os.path.exists(COMET_JAR):
        sys.exit(f"no Comet jar at {COMET_JAR}: make {os.path.relpath(COMET_JAR, ROOT)} downloads it")
    if any(base_engine(e) == "ember" for e in engines) and not os.path.exists(EMBER_JAR):
        sys.exit(f"no Ember jar at {EMBER_JAR}: run make jar (or point EMBER_JAR at one)")
    for t in args.tables.split(","):
        if not os.path.exists(os.path.join(args.data, f"{t}.parquet")):
            sys.exit(f"no {t}.parquet in {args.data}: {suite.data_hint}")
    work = os.path.join(ROOT, "dev", "work", f"{suite.name}-runs")
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
                # An earlier session's results (same scale factor and statements), e.g. to time only a rebuilt Ember.
                with open(out) as f:
                    s = json.load(f)
                if (s.get("sf") != args.sf or s.get("queries") != args.queries or s.get("warmup") != args.warmup
                        or s.get("source") != suite.source(args)):
                    sys.exit(f"{out} is from another configuration: run {e} again")
                print(f"== round {r + 1}/{args.runs}: {e}, reused from {s['time_utc']}", flush=True)
                sessions[e].append(s)
                continue
            print(f"== round {r + 1}/{args.runs}: {e}", flush=True)
            sessions[e].append(run_engine(suite, args, e, out, env))
    report(suite, args, engines, sessions)


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def best_results(engines, sessions, sids):
    """engine -> id -> the result with the best time over the rounds (a failed one where every round failed),
    with `stable`: every round's rows match the first's (`rows_match`: ties allowed)."""
    best = {}
    for e in engines:
        best[e] = {}
        for sid in sids:
            runs = [s["results"][sid] for s in sessions[e]]
            ok = [x for x in runs if not x["error"]]
            best[e][sid] = dict(min(ok, key=lambda x: x["wall_s"]) if ok else runs[0])
            best[e][sid]["stable"] = all(rows_match(x, ok[0]) != "DIFF" for x in ok)
    return best


def _error_text(x):
    return x["error"] if x["error"].startswith("[") else f"[{x.get('error_class') or 'error'}] {x['error']}"


def report(suite, args, engines, sessions):
    sids = args.queries.split(",")
    best = best_results(engines, sessions, sids)
    base = "vanilla" if "vanilla" in engines else None
    failures, notes, rows_out = [], [], []
    runs_dir = os.path.relpath(os.path.join(ROOT, "dev", "work", f"{suite.name}-runs"), ROOT)
    for sid in sids:
        row = [suite.label(sid)]
        for e in engines:
            x = best[e][sid]
            if x["error"]:
                row += ["error", "-"] if e == base else ["error", "-", "-", "-"]
                failures.append(f"{suite.label(sid)} {e}: {_error_text(x)}")
                continue
            ref = best[base][sid] if base else None
            ratio = ref["wall_s"] / x["wall_s"] if ref and not ref["error"] else None
            if e == base:
                row += [f"{x['wall_s']:.2f}", str(x["rows"])]
                if not x["stable"]:
                    failures.append(f"{suite.label(sid)} {e}: rows differ between rounds")
                continue
            match = rows_match(x, ref) if ref and not ref["error"] else "-"
            x["rows_equal"] = match
            if match == "DIFF" or not x["stable"]:
                failures.append(f"{suite.label(sid)} {e}: rows differ from vanilla's "
                                f"({runs_dir}/rows-{e}/{suite.label(sid)}.txt)")
            elif match == "ties":
                notes.append(f"{suite.label(sid)} {e}: rows differ from vanilla's only among the rows tied at the "
                             f"LIMIT (ORDER BY keys {x['ties']['boundary']})")
            share = f"{x['native']}/{x['operators']}" if base_engine(e) != "vanilla" else "-"
            row += [f"{x['wall_s']:.2f}", f"{ratio:.2f}x" if ratio else "-",
                    match if x["stable"] else "UNSTABLE", share]
        rows_out.append(row)
    failures += suite.checks(args, best, base, sids)
    headers = ["query"]
    for e in engines:
        headers += [f"{e} s", f"{e} rows"] if e == base else \
            [f"{e} s", f"{e} vs vanilla", f"{e} rows equal", f"{e} native ops"]
    print(f"# {suite.title} SF{args.sf}: best of {args.runs} run(s){' after a warm-up' if args.warmup else ''}, "
          f"local[{args.cores}], off-heap {args.offheap}\n")
    table(headers, rows_out)
    summary, slower = summarize(suite, engines, best, base, sids)
    table(["engine", "answered", "rows equal / ties / DIFF", "plans fully native", "native operators",
           "geomean vs vanilla", "total s", "slower than vanilla"], summary)
    common_n = sum(1 for sid in sids if all(not best[e][sid]["error"] for e in engines))
    print(f"Geometric mean, total and slower: over the {common_n} statement(s) every engine answered.\n")
    for e, names in slower.items():
        if names:
            print(f"Slower than vanilla in {e}: {', '.join(names)}\n")
    for e in engines:
        if base_engine(e) == "vanilla":
            continue
        left = [[suite.label(sid), ", ".join(best[e][sid]["spark_operators"]) or "(none)"] for sid in sids
                if not best[e][sid]["error"]]
        if left:
            print(f"Spark operators left in {e}'s plans:\n")
            table(["query", "Spark operators"], left)
        by_op = {}
        for sid in sids:
            for op in [] if best[e][sid]["error"] else best[e][sid]["spark_operators"]:
                by_op.setdefault(op, []).append(suite.label(sid))
        if by_op:
            print(f"The same by operator ({e}):\n")
            table(["Spark operator", "statements", "in"],
                  [[op, len(ls), ", ".join(ls)] for op, ls in sorted(by_op.items(), key=lambda kv: -len(kv[1]))])
    # The plugins must really have run: every plan has native operators (Comet's named Comet*, Ember's Ember*).
    for e in engines:
        if base_engine(e) != "vanilla":
            empty = [suite.label(sid) for sid in sids if not best[e][sid]["error"] and best[e][sid]["native"] == 0]
            if empty:
                failures.append(f"{e}: no native operator in the plans of {', '.join(empty)} — is the plugin on?")
    if args.io:
        io_rows = []
        for sid in sids:
            for e in engines:
                x = best[e][sid]
                io_rows.append([suite.label(sid), e, f"{x['wall_s']:.2f}", f"{x.get('input_mb', 0):.1f}",
                                f"{x.get('input_rows', 0):,}", f"{x.get('shuffle_rows', 0):,}",
                                f"{x.get('shuffle_mb', 0):.1f}"])
        print("Input and shuffle per query (Spark's stage metrics; shuffle rows: Ember's exchanges' own count, "
              "its shuffle records being blocks):\n")
        table(["query", "engine", "s", "input MB", "input rows", "shuffle rows", "shuffle MB"], io_rows)
    result = {
        "suite": suite.name, "sf": args.sf, "runs": args.runs, "warmup": args.warmup, "cores": args.cores,
        "offheap": args.offheap, "source": suite.source(args),
        "time_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "settings": {e: sessions[e][0]["settings"] for e in engines},
        "sessions_utc": {e: [x.get("time_utc") for x in sessions[e]] for e in engines},
        "best": {e: {suite.label(sid): best[e][sid] for sid in sids} for e in engines},
        "summary": summary, "failures": failures, "ties": notes,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    if notes:
        print("TIES (not failures):\n  " + "\n  ".join(notes))
    print(f"results: {args.out}")
    if failures:
        print("FAILURES:\n  " + "\n  ".join(failures), file=sys.stderr)
        sys.exit(1)


def summarize(suite, engines, best, base, sids):
    """One row per engine: statements answered; rows equal / ties / DIFF against vanilla; plans fully native;
    native operators over the answered statements; and, over the statements every engine answered, the
    geometric mean of the speedups, the total time and the statements slower than vanilla."""
    common = [sid for sid in sids if all(not best[e][sid]["error"] for e in engines)]
    summary, slower = [], {}
    for e in engines:
        ok = [sid for sid in sids if not best[e][sid]["error"]]
        native = base_engine(e) != "vanilla"
        nat = sum(best[e][sid]["native"] for sid in ok)
        tot = sum(best[e][sid]["operators"] for sid in ok)
        full = sum(1 for sid in ok if best[e][sid]["native"] == best[e][sid]["operators"])
        matches = [best[e][sid].get("rows_equal") for sid in ok]
        if base and e != base:
            ratios = {sid: best[base][sid]["wall_s"] / best[e][sid]["wall_s"] for sid in common}
            slower[e] = [f"{suite.label(sid)} ({r:.2f}x)" for sid, r in ratios.items() if r < 1]
            speed = f"{geomean(list(ratios.values())):.2f}x" if ratios else "-"
            n_slower = str(len(slower[e]))
        else:
            speed, n_slower = ("1.00x", "-") if e == base else ("-", "-")
        summary.append([
            e, f"{len(ok)}/{len(sids)}",
            "/".join(str(matches.count(m)) for m in ("yes", "ties", "DIFF")) if base and e != base else "-",
            f"{full}/{len(ok)}" if native else "-",
            f"{nat}/{tot} ({100 * nat / max(tot, 1):.0f}%)" if native else "-",
            speed, f"{sum(best[e][sid]['wall_s'] for sid in common):.1f}" if common else "-", n_slower,
        ])
    return summary, slower


def main(suite):
    p = argparse.ArgumentParser(description=sys.modules["__main__"].__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--engine", choices=ENGINES, help="run one engine's session (under spark-submit)")
    p.add_argument("--engines", default=",".join(e for e in ENGINES if e != "ember-text"))
    p.add_argument("--sf", default=os.environ.get(suite.sf_env, "1"))
    p.add_argument("--data", help=f"directory of <table>.parquet files (default dev/work/{suite.name}/sf<SF>)")
    p.add_argument("--queries", help="statements to run, comma-separated (default: all)")
    p.add_argument("--runs", type=int, default=1, help="rounds; each statement's time is the best over them")
    p.add_argument("--warmup", action="store_true", help="one untimed run of every statement first, per session")
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--driver-memory", default="8g")
    p.add_argument("--offheap", default="4g", help="spark.memory.offHeap.size, the same for every engine")
    p.add_argument("--reuse", default="", help=f"engines whose sessions of the last run (dev/work/{suite.name}-runs) "
                   "are reused instead of run again, e.g. vanilla,comet")
    p.add_argument("--conf", action="append", default=[], help="k=v passed to every engine's session")
    p.add_argument("--tables", default=",".join(suite.tables), help="tables <name>.parquet under --data to register")
    p.add_argument("--io", action="store_true", help="also print each statement's input and shuffle figures")
    p.add_argument("--out", default=os.path.join(ROOT, "dev", "work", f"{suite.name}-results.json"))
    p.add_argument("--session-out")
    p.add_argument("--rows-dir")
    suite.add_arguments(p)
    args = p.parse_args()
    args.data = os.path.abspath(args.data or os.path.join(ROOT, "dev", "work", suite.name, f"sf{args.sf}"))
    suite.prepare(args)
    args.queries = args.queries or ",".join(suite.statements(args))
    if args.engine:
        run_session(suite, args)
    else:
        drive(suite, args)
