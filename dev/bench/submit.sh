#!/usr/bin/env bash
# Runs one benchmark script (dev/bench/<name>.py) under spark-submit with Ember's jar dropped in.
# Usage: dev/bench/submit.sh <name> [script args]. Env: BENCH_CORES (2), BENCH_DRIVER_MEMORY (8g),
# BENCH_OFFHEAP (4g: the pool all tasks share; scripts set per-query Ember knobs themselves), EMBER_JAR,
# BENCH_CONF (one more k=v, e.g. a static key).
set -euo pipefail
cd "$(dirname "$0")/../.."
name=$1; shift
JAR=${EMBER_JAR:-spark/target/ember-spark-0.1.0-SNAPSHOT.jar}
[ -f "$JAR" ] || { echo "no jar at $JAR: run make jar" >&2; exit 1; }
[ -x dev/.venv/bin/spark-submit ] || { python3 -m venv dev/.venv && dev/.venv/bin/pip install -q pyspark==4.1.3; }
export PATH="$PWD/dev/.venv/bin:$PATH"
export PYSPARK_PYTHON="$PWD/dev/.venv/bin/python"
export PYTHONPATH="$PWD/dev/bench${PYTHONPATH:+:$PYTHONPATH}"
exec dev/.venv/bin/spark-submit \
  --master "local[${BENCH_CORES:-2}]" \
  --driver-memory "${BENCH_DRIVER_MEMORY:-8g}" \
  --jars "$JAR" \
  --conf spark.plugins=org.ember.EmberPlugin \
  --conf spark.memory.offHeap.enabled=true \
  --conf spark.memory.offHeap.size="${BENCH_OFFHEAP:-4g}" \
  --conf spark.ui.enabled=false \
  ${BENCH_CONF:+--conf "$BENCH_CONF"} \
  --conf spark.driver.extraJavaOptions=-Dlog4j2.level=warn \
  "dev/bench/$name.py" "$@"
