"""TPC-H: the 22 queries (dev/bench/tpch/q*.sql) on vanilla Spark, Apache DataFusion Comet and Ember, each engine
in its own spark-submit session (Comet's plugin and shuffle manager are fixed at startup).

    dev/.venv/bin/python dev/bench/tpch.py [--sf 1] [--runs 1] [--warmup] [--engines vanilla,comet,ember]
                                           [--queries 1,3,18] [--data DIR] [--out dev/work/tpch-results.json]

`make bench-tpch` (TPCH_SF=1 by default) generates the data with the pinned tpchgen-cli, fetches Comet's jar,
builds Ember's release jar and runs this. Without --engine this process is the driver: for each of `--runs`
rounds it starts one spark-submit per engine (the engines' order rotated every round, so the machine's noise
spreads over all of them), each running every query once (after one untimed run of each with --warmup) and
writing what it saw to a JSON file; then it prints Markdown tables and writes --out.

What is measured per query and engine (time, ratio, rows equal, native share, Spark operators left) and the
runner itself: dev/bench/suite.py, shared with tpcds.py. At SF 1 vanilla's row counts are also checked against
the specification's answers.
"""
import decimal
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite  # noqa: E402  (dev/bench/suite.py)

QUERY_DIR = os.path.join(suite.ROOT, "dev", "bench", "tpch")
# Row counts of the qualification answers at SF 1 (TPC-H specification, appendix C): a check of the queries.
SF1_ROWS = {1: 4, 2: 100, 3: 10, 4: 5, 5: 5, 6: 1, 7: 4, 8: 2, 9: 175, 10: 20, 11: 1048, 12: 2, 13: 42, 14: 1,
            15: 1, 16: 18314, 17: 1, 18: 57, 19: 1, 20: 186, 21: 100, 22: 7}


def query_text(n, sf="1", query_dir=QUERY_DIR):
    with open(os.path.join(query_dir, f"q{n}.sql")) as f:
        text = "\n".join(l for l in f.read().splitlines() if not l.lstrip().startswith("--"))
    if n == 11 and query_dir == QUERY_DIR:
        # The specification's FRACTION is 0.0001 / SF (2.4.11.3): unscaled, Q11 returns no row from SF 10 on.
        text = text.replace("* 0.0001", f"* {format(decimal.Decimal('0.0001') / decimal.Decimal(sf), 'f')}")
    return text


class Tpch(suite.Suite):
    name = "tpch"
    title = "TPC-H"
    sf_env = "TPCH_SF"
    tables = ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"]
    data_hint = "generate it with tpchgen-cli (make bench-tpch does)"

    def add_arguments(self, p):
        p.add_argument("--query-dir", default=QUERY_DIR, help="directory of q<N>.sql over the TPC-H tables: "
                       "dev/bench/tpch (the 22 queries, default) or another set, e.g. dev/bench/grouping")

    def prepare(self, args):
        args.query_dir = os.path.abspath(args.query_dir)

    def statements(self, args):
        return [str(i) for i in range(1, 23)]

    def label(self, sid):
        return f"q{sid}"

    def text(self, args, sid):
        return query_text(int(sid), args.sf, args.query_dir)

    def source(self, args):
        return args.query_dir

    def session_args(self, args):
        return ["--query-dir", args.query_dir]

    def setup(self, spark, args):
        # A query set's setup.sql (e.g. CACHE TABLE): run once per session, before any timing.
        setup = os.path.join(args.query_dir, "setup.sql")
        if os.path.exists(setup):
            with open(setup) as f:
                for statement in (s.strip() for s in f.read().split(";")):
                    if statement and not all(l.strip().startswith("--") for l in statement.splitlines()):
                        spark.sql(statement).collect()

    def checks(self, args, best, base, sids):
        if args.sf != "1" or args.query_dir != QUERY_DIR or not base:
            return []
        return [f"q{sid}: vanilla returned {best[base][sid]['rows']} rows, the spec's answer has {SF1_ROWS[int(sid)]}"
                for sid in sids if best[base][sid]["rows"] != SF1_ROWS[int(sid)]]


if __name__ == "__main__":
    suite.main(Tpch())
