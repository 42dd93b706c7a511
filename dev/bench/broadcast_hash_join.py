"""Broadcast hash join benchmark: vanilla Spark's BroadcastHashJoinExec (one HashedRelation per executor) against
Ember's native broadcast join (EmberBroadcastExchangeExec + EmberBroadcastHashJoinExec: one hash table per
executor, shared by its tasks; and, with the shared build off, one built from the broadcast Arrow blocks in
every task), and Spark's join over Ember's exchange.

    dev/bench/submit.sh broadcast_hash_join [--dim 1000000] [--probe 20000000] [--partitions 8] [--repeat 2]

Default: a 1M-row dimension (long key, a long and a string payload) broadcast to 20M probe rows in --partitions
tasks (a per-task build's cost grows with the task count), joined and aggregated. Reported: wall and JVM CPU
seconds per configuration and whether the rows were identical across them (common.compare_configs).
"""
import argparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from common import compare_configs

CONFIGS = [
    ("vanilla", {"spark.ember.enabled": "false"}),
    ("ember", {"spark.ember.enabled": "true", "spark.ember.exec.broadcastHashJoin.enabled": "true",
               "spark.ember.exec.broadcastHashJoin.sharedBuild.enabled": "true"}),
    ("ember, table per task", {"spark.ember.enabled": "true", "spark.ember.exec.broadcastHashJoin.enabled": "true",
                               "spark.ember.exec.broadcastHashJoin.sharedBuild.enabled": "false"}),
    ("ember exchange, Spark join",
     {"spark.ember.enabled": "true", "spark.ember.exec.broadcastHashJoin.enabled": "false"}),
]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dim", type=int, default=1_000_000)
    p.add_argument("--probe", type=int, default=20_000_000)
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--shapes", default="inner,left_semi")
    args = p.parse_args()
    spark = SparkSession.builder.getOrCreate()
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    dim = spark.range(0, args.dim, 1, 2).select(
        F.col("id").alias("k"), (F.col("id") * 3).alias("d1"), F.concat(F.lit("ü-"), F.col("id")).alias("d2"))
    probe = spark.range(0, args.probe, 1, args.partitions).select(
        ((F.col("id") * 7919) % (2 * args.dim)).alias("pk"), F.col("id").alias("p1"))

    def query(shape):
        j = probe.join(F.broadcast(dim), F.col("pk") == F.col("k"), shape)
        cols = [F.count(F.lit(1)), F.sum("p1")] + ([F.sum("d1"), F.max("d2")] if shape == "inner" else [])
        return j.agg(*cols)

    compare_configs(spark, CONFIGS, args.shapes.split(","), query, "shape", repeat=args.repeat)


if __name__ == "__main__":
    main()
