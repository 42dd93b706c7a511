#!/usr/bin/env bash
# The demo: spark-submit (PySpark 4.1.3 from dev/.venv) with Ember's jar dropped in. See dev/demo.py.
set -euo pipefail
cd "$(dirname "$0")/.."
JAR=${EMBER_JAR:-spark/target/ember-spark-0.1.0-SNAPSHOT.jar}
SUBMIT=${SPARK_SUBMIT:-dev/.venv/bin/spark-submit}
[ -f "$JAR" ] || { echo "no jar at $JAR: run make" >&2; exit 1; }
# spark-submit finds Spark through the python on PATH: the venv's, which has pyspark.
export PATH="$PWD/dev/.venv/bin:$PATH"
export PYSPARK_PYTHON="$PWD/dev/.venv/bin/python"
export PYTHONPATH="$PWD/dev/bench${PYTHONPATH:+:$PYTHONPATH}"
exec "$SUBMIT" \
  --master "local[${DEMO_CORES:-2}]" \
  --driver-memory "${DEMO_DRIVER_MEMORY:-6g}" \
  --jars "$JAR" \
  --conf spark.plugins=org.ember.EmberPlugin \
  --conf spark.memory.offHeap.enabled=true \
  --conf spark.memory.offHeap.size="${DEMO_OFFHEAP:-2g}" \
  --conf spark.sql.shuffle.partitions=4 \
  --conf spark.ui.enabled=false \
  --conf spark.driver.extraJavaOptions=-Dlog4j2.level=warn \
  dev/demo.py "$@"
