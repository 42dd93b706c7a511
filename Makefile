# Ember: `make` builds the native library (release) and the jar; `make test` runs every check CI runs;
# `make demo` runs the demo with spark-submit. See README.md.
SHELL := /bin/bash
PLATFORM := $(shell uname -s | tr A-Z a-z)-$(shell uname -m | sed 's/amd64/x86_64/;s/arm64/aarch64/')
LIB := libember.so
JAR := spark/target/ember-spark-0.1.0-SNAPSHOT.jar
MVN := mvn -B -q -f spark/pom.xml
NATIVE_DIR := spark/target/native/$(PLATFORM)
PYTHON ?= python3
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
VENV := dev/.venv

.PHONY: all native native-dev jar jar-dev test test-rust test-scala test-suites test-memory test-memory-spark \
	test-local-cluster lint demo bench bench-spark golden docs plans clean tpch-data tpcds-data bench-tpch fuzz \
	test-fuzz

all: jar

# Release library (for the demo, benchmarks and users).
native:
	cargo build --release -p ember-jni
	mkdir -p $(NATIVE_DIR) && cp $(TARGET_DIR)/release/$(LIB) $(NATIVE_DIR)/$(LIB)

# Test library: the dev profile (dependencies at opt-level 1, no debuginfo), shared with the Rust tests so
# CI compiles DataFusion once.
native-dev:
	cargo build --workspace
	mkdir -p $(NATIVE_DIR) && cp $(TARGET_DIR)/debug/$(LIB) $(NATIVE_DIR)/$(LIB)

jar: native
	$(MVN) package -DskipTests

jar-dev: native-dev
	$(MVN) package -DskipTests

lint:
	cargo fmt --all -- --check
	dev/check-licenses > /dev/null
	cargo clippy --workspace --all-targets -- -D warnings
	$(MVN) org.antipathy:mvn-scalafmt_2.13:1.1.1713302731.c3d0074:format -Dscalafmt.validateOnly=true

test-rust:
	cargo test --workspace

# Scala suites (Ember off vs on, exact rows, native nodes asserted) against the jar's classes and library.
# On failure, the failed tests' names and causes are printed last, where a log's tail shows them.
test-scala: jar-dev tpch-data tpcds-data
	$(MVN) test || { grep -h -A12 'FAILED \*\*\*' spark/target/surefire-reports/EmberTestSuite.txt | head -150; exit 1; }

# A fast subset of Spark's own SQL suites with Ember switched on.
test-suites: jar-dev
	dev/run-spark-suites --set ci

# The differential fuzzer (dev/fuzz, docs/fuzzing.md): its generator's self-checks, every saved regression case in
# dev/fuzz/cases/ replayed, then a fixed-seed run of random queries (~3 minutes on 2 cores), each with Ember off
# and on; fails on any difference from Spark (a new finding is shrunk into dev/work/fuzz/).
FUZZ_TEST_SEED ?= 1
FUZZ_TEST_QUERIES ?= 100
test-fuzz: jar-dev
	$(PYTHON) dev/fuzz/selftest.py
	dev/fuzz/run --replay --seed $(FUZZ_TEST_SEED) --queries $(FUZZ_TEST_QUERIES) --shrink-seconds 60 --avoid-open \
		--save-dir dev/work/fuzz

test: lint test-rust test-scala test-suites test-fuzz

# On demand: the fuzzer for FUZZ_MINUTES (120) from FUZZ_SEED (the time by default); findings are shrunk and
# saved into dev/fuzz/open/ (a case moves to dev/fuzz/cases/ once fixed, and make test replays it).
FUZZ_MINUTES ?= 120
FUZZ_SEED ?= $(shell date +%s)
fuzz: jar-dev
	dev/fuzz/run --seed $(FUZZ_SEED) --minutes $(FUZZ_MINUTES)

# On demand: every spilling operator at 8/16/32/64 MiB per task, twice each and on a simulated busy executor
# (`cargo test` runs the matrix's corners).
test-memory:
	EMBER_MEMORY_MATRIX=full cargo test -p ember-engine --test engine memory_matrix::

# On demand: the same operators through Spark (EmberMemoryMatrixSuite: a local[2] session per budget, 8/16/32/64
# MiB of off-heap memory per task, each query with Ember off, then twice on; EMBER_MEMORY_MATRIX_BUDGETS=8,16,
# EMBER_MEMORY_MATRIX_CELLS=sort,join and EMBER_MEMORY_MATRIX_ROWS pick budgets, cells and input size; ~5 minutes on
# 2 cores). See docs/tuning.md.
test-memory-spark: jar-dev
	$(MVN) test -Dember.suites=org.apache.spark.sql.ondemand.EmberMemoryMatrixSuite

# On demand: a native shuffle and join on Spark's local-cluster (executors in their own JVMs, launched from the
# pyspark package's Spark home in dev/.venv with Ember's jar on their class path).
test-local-cluster: jar-dev $(VENV)/bin/spark-submit
	SPARK_HOME=$$(ls -d $(CURDIR)/$(VENV)/lib/python*/site-packages/pyspark) $(MVN) test -Dember.suites=org.apache.spark.sql.ondemand.EmberLocalClusterSuite

docs:
	$(MVN) test -Dember.suites=org.ember.EmberConfDocsSuite,org.apache.spark.sql.ember.EmberExpressionsDocsSuite \
		-Dember.writeDocs=true

# Replayable plans for tests/engine/plan_replay.rs: real queries' serialized Plans over a small checked-in Parquet file,
# their scans' tasks and Spark's answers, written by EmberPlanReplaySuite into native/engine/tests/data/plans/.
plans: jar-dev
	$(MVN) test -Dember.suites=org.apache.spark.sql.ember.EmberPlanReplaySuite -Dember.writePlans=true

# The Rust tests' golden tables, recomputed by Spark 4.1.3's Catalyst expressions (dev/golden/generate.py): the
# decimal arithmetic and JDK 17 cast tables with the default java (JDK 17), the JDK 25 cast table and
# jdk_golden.rs with JDK25_HOME (skipped when unset). `git diff` shows what changed.
JDK25_HOME ?= $(firstword $(wildcard /usr/lib/jvm/*-25-*))
golden: $(VENV)/bin/spark-submit
	$(VENV)/bin/python dev/golden/generate.py decimal cast functions
ifneq ($(JDK25_HOME),)
	JAVA_HOME=$(JDK25_HOME) $(VENV)/bin/python dev/golden/generate.py cast jdk
else
	@echo "JDK25_HOME is not set: GOLDEN_JDK25 and jdk_golden.rs not regenerated"
endif

$(VENV)/bin/spark-submit:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q pyspark==4.1.3

# TPC-H data: tpchgen-cli (a Rust port of dbgen, pinned) writes one Parquet file per table into
# dev/work/tpch/sf<SF>. SF 0.01 is EmberTpchSuite's data set (make test-scala makes it first); bench-tpch uses TPCH_SF.
TPCHGEN_VERSION := 4.0.0
TPCH_SF ?= 1
$(VENV)/bin/tpchgen-cli:
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q tpchgen-cli==$(TPCHGEN_VERSION)

dev/work/tpch/sf%/lineitem.parquet: | $(VENV)/bin/tpchgen-cli
	rm -rf dev/work/tpch/sf$*.tmp
	$(VENV)/bin/tpchgen-cli parquet -s $* -o dev/work/tpch/sf$*.tmp -q
	rm -rf dev/work/tpch/sf$* && mv dev/work/tpch/sf$*.tmp dev/work/tpch/sf$*

tpch-data: dev/work/tpch/sf0.01/lineitem.parquet

# TPC-DS data: tpcgen-cli (the same project's TPC-DS generator, pinned) writes one Parquet file per table into
# dev/work/tpcds/sf<SF>. SF 0.01 is EmberTpcdsSuite's data set (make test-scala makes it first). The queries are
# Spark's own (tpcds/q*.sql in the spark-sql test-jar), read at run time.
TPCGEN_VERSION := 4.0.0
$(VENV)/bin/tpcgen-cli:
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q tpcgen-cli==$(TPCGEN_VERSION)

dev/work/tpcds/sf%/store_sales.parquet: | $(VENV)/bin/tpcgen-cli
	rm -rf dev/work/tpcds/sf$*.tmp
	$(VENV)/bin/tpcgen-cli tpcds parquet -s $* --output-dir=dev/work/tpcds/sf$*.tmp
	rm -rf dev/work/tpcds/sf$* && mv dev/work/tpcds/sf$*.tmp dev/work/tpcds/sf$*

tpcds-data: dev/work/tpcds/sf0.01/store_sales.parquet

demo: $(VENV)/bin/spark-submit
	@test -f $(TARGET_DIR)/release/$(LIB) && test -f $(JAR) || $(MAKE) jar
	dev/demo.sh

# Rust micro-benches (native/engine/benches, release profile, one per operator): each prints the alternatives
# side by side as ratios. `make bench SPARK=1` then runs the Spark benchmarks too (bench-spark).
bench:
	cargo bench -p ember-engine
ifneq ($(SPARK),)
	$(MAKE) bench-spark
endif

# Side-by-side Spark benchmarks (dev/bench, vanilla Spark vs Ember in one spark-submit each) on the release jar.
# BENCHES picks scripts (names of dev/bench/*.py), BENCH_ARGS is passed to each; see dev/bench/README.md.
BENCHES ?= aggregate aggregate_functions spilling_hash_join parquet_scan prefix_window prefix_window_segments
bench-spark: jar $(VENV)/bin/spark-submit
	set -e; for b in $(BENCHES); do echo "== dev/bench/$$b.py"; dev/bench/submit.sh $$b $(BENCH_ARGS); done

# TPC-H's 22 queries on vanilla Spark, Apache DataFusion Comet and Ember, each in its own spark-submit, on the
# release jar (see dev/bench/README.md). TPCH_SF=1 by default; TPCH_ARGS is passed to dev/bench/tpch.py.
COMET_JAR := dev/work/comet-spark-spark4.1_2.13-1.2.0.jar
$(COMET_JAR):
	mkdir -p dev/work
	curl -sSfL -o $@.tmp https://repo1.maven.org/maven2/org/apache/datafusion/comet-spark-spark4.1_2.13/1.2.0/comet-spark-spark4.1_2.13-1.2.0.jar
	mv $@.tmp $@

bench-tpch: jar $(VENV)/bin/spark-submit $(COMET_JAR) dev/work/tpch/sf$(TPCH_SF)/lineitem.parquet
	$(VENV)/bin/python dev/bench/tpch.py --sf $(TPCH_SF) $(TPCH_ARGS)

# TPC-DS's 103 statements (Spark's own tpcds/q*.sql, read at run time from the spark-sql test-jar, which
# dev/bench/tpcds.py finds in Maven's local repository or fetches) on the same three engines, each in its own
# spark-submit (see dev/bench/README.md). TPCDS_SF=1 by default; TPCDS_ARGS is passed to dev/bench/tpcds.py.
TPCDS_SF ?= 1
.PHONY: bench-tpcds
bench-tpcds: jar $(VENV)/bin/spark-submit $(COMET_JAR) dev/work/tpcds/sf$(TPCDS_SF)/store_sales.parquet
	$(VENV)/bin/python dev/bench/tpcds.py --sf $(TPCDS_SF) $(TPCDS_ARGS)

clean:
	cargo clean
	$(MVN) clean
