"""TPC-DS: the 103 statements of the 99 queries (q1–q99, q14, q23, q24 and q39 in two parts each) exactly as
Spark tests them, on vanilla Spark, Apache DataFusion Comet and Ember, each engine in its own spark-submit
session (Comet's plugin and shuffle manager are fixed at startup).

    dev/.venv/bin/python dev/bench/tpcds.py [--sf 1] [--runs 1] [--warmup] [--engines vanilla,comet,ember]
                                            [--queries q1,q14a,q72] [--data DIR] [--tests-jar JAR]
                                            [--out dev/work/tpcds-results.json]

`make bench-tpcds` (TPCDS_SF=1 by default, TPCDS_ARGS passed on) generates the data with the pinned tpcgen-cli,
fetches Comet's jar, builds Ember's release jar and runs this.

The statements are read at run time from `tpcds/q*.sql` in the spark-sql test-jar of the installed pyspark's
version (never copied into the repository): --tests-jar, else Maven's local repository (settings.xml's
localRepository, else ~/.m2/repository), else dev/work/; where none has it, `mvn dependency:copy` fetches it
into dev/work/.

What is measured per statement and engine (time, ratio, rows equal — `ties` where an ORDER BY … LIMIT cuts
through ties —, native share, Spark operators left, failures) and the runner itself: dev/bench/suite.py, shared
with tpch.py.
"""
import os
import re
import subprocess
import sys
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite  # noqa: E402  (dev/bench/suite.py)

WORK = os.path.join(suite.ROOT, "dev", "work")


def spark_version():
    import pyspark

    return pyspark.__version__


def tests_jar_name(version):
    return f"spark-sql_2.13-{version}-tests.jar"


def maven_local_repository():
    """Maven's local repository: settings.xml's <localRepository> (user's, then the installation's), else
    ~/.m2/repository."""
    home = os.path.expanduser("~")
    settings = [os.path.join(home, ".m2", "settings.xml")]
    if os.environ.get("MAVEN_HOME"):
        settings.append(os.path.join(os.environ["MAVEN_HOME"], "conf", "settings.xml"))
    for path in settings:
        if os.path.exists(path):
            with open(path) as f:
                m = re.search(r"<localRepository>\s*([^<]+?)\s*</localRepository>", f.read())
            if m:
                return os.path.expanduser(m.group(1).replace("${user.home}", home))
    return os.path.join(home, ".m2", "repository")


def find_tests_jar(version):
    """The spark-sql test-jar: Maven's local repository, else dev/work/, else fetched into dev/work/ by Maven."""
    name = tests_jar_name(version)
    candidates = [
        os.path.join(maven_local_repository(), "org", "apache", "spark", "spark-sql_2.13", version, name),
        os.path.join(WORK, name),
    ]
    for path in candidates:
        if os.path.exists(path):
            return path
    os.makedirs(WORK, exist_ok=True)
    print(f"no {name} in {candidates[0]}: fetching it with Maven into {WORK}", flush=True)
    subprocess.run(["mvn", "-B", "-q", "dependency:copy",
                    f"-Dartifact=org.apache.spark:spark-sql_2.13:{version}:jar:tests", f"-DoutputDirectory={WORK}"],
                   check=True)
    if not os.path.exists(candidates[1]):
        sys.exit(f"mvn dependency:copy did not write {candidates[1]}")
    return candidates[1]


def statement_ids(jar):
    """Every tpcds/q*.sql of the jar, in query order (q14a before q14b before q15)."""
    with zipfile.ZipFile(jar) as z:
        names = [m.group(1) for m in (re.fullmatch(r"tpcds/(q\d+[ab]?)\.sql", n) for n in z.namelist()) if m]
    return sorted(names, key=lambda s: (int(re.sub(r"\D", "", s)), s))


class Tpcds(suite.Suite):
    name = "tpcds"
    title = "TPC-DS"
    sf_env = "TPCDS_SF"
    tables = [
        "call_center", "catalog_page", "catalog_returns", "catalog_sales", "customer", "customer_address",
        "customer_demographics", "date_dim", "household_demographics", "income_band", "inventory", "item",
        "promotion", "reason", "ship_mode", "store", "store_returns", "store_sales", "time_dim", "warehouse",
        "web_page", "web_returns", "web_sales", "web_site",
    ]
    data_hint = "generate it with tpcgen-cli (make bench-tpcds does)"

    def __init__(self):
        self._texts = {}

    def setup(self, spark, args):
        # The specification's (and tpcgen-cli's) c_last_review_date_sk is c_last_review_date in Spark's queries
        # (q30 selects it).
        customer = spark.table("customer")
        if "c_last_review_date_sk" in customer.columns:
            customer.withColumnRenamed("c_last_review_date_sk", "c_last_review_date").createOrReplaceTempView(
                "customer")

    def add_arguments(self, p):
        p.add_argument("--tests-jar", help="the spark-sql test-jar holding tpcds/q*.sql (default: found or fetched, "
                       "see above)")

    def prepare(self, args):
        args.tests_jar = os.path.abspath(args.tests_jar or find_tests_jar(spark_version()))
        ids = statement_ids(args.tests_jar)
        if not ids:
            sys.exit(f"no tpcds/q*.sql in {args.tests_jar}")
        self._ids = ids
        if args.queries:
            unknown = [q for q in args.queries.split(",") if q not in ids]
            if unknown:
                sys.exit(f"no statement {', '.join(unknown)} in {args.tests_jar} (they are named q1 … q99, "
                         "q14a, q14b, q23a, q23b, q24a, q24b, q39a, q39b)")

    def statements(self, args):
        return self._ids

    def text(self, args, sid):
        if sid not in self._texts:
            with zipfile.ZipFile(args.tests_jar) as z:
                self._texts[sid] = z.read(f"tpcds/{sid}.sql").decode("utf-8")
        return self._texts[sid]

    def source(self, args):
        return args.tests_jar

    def session_args(self, args):
        return ["--tests-jar", args.tests_jar]


if __name__ == "__main__":
    suite.main(Tpcds())
