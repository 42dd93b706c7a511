"""Star-join data for the dynamic-filter benchmark (dev/bench/star/q*.sql, run by tpch.py --query-dir):

    dev/.venv/bin/python dev/bench/star_data.py [--rows 50000000] [--out dev/work/star]

fact.parquet: `--rows` rows (k INT: 250 rows per key, in key order, so the files' row groups cover narrow key
ranges; v BIGINT; amount DECIMAL(7,1), so that sums are exact in any order), 16 files, 16 MiB row groups.
dim.parquet: one row per key (k; region: 100 regions, each a contiguous 1% of the keys; category: 100
categories, each 1% of the keys scattered; name).
"""
import argparse
import os

from pyspark.sql import SparkSession

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

p = argparse.ArgumentParser()
p.add_argument("--rows", type=int, default=50_000_000)
p.add_argument("--out", default=os.path.join(ROOT, "dev", "work", "star"))
args = p.parse_args()
spark = (SparkSession.builder.master("local[2]").config("spark.driver.memory", "4g")
         .config("spark.ui.enabled", "false").getOrCreate())
keys = max(1, args.rows // 250)
(spark.range(0, args.rows, 1, 16)
 .selectExpr("CAST(id DIV 250 AS INT) AS k", "id AS v", "CAST((id % 1000) / 10 AS DECIMAL(7, 1)) AS amount")
 .write.mode("overwrite").option("parquet.block.size", 16 << 20).parquet(os.path.join(args.out, "fact.parquet")))
(spark.range(0, keys, 1, 2)
 .selectExpr("CAST(id AS INT) AS k",
             f"CONCAT('r', CAST(id * 100 DIV {keys} AS STRING)) AS region",
             "CONCAT('c', CAST((id * 7919) % 100 AS STRING)) AS category",
             "CONCAT('name-', CAST(id AS STRING)) AS name")
 .write.mode("overwrite").parquet(os.path.join(args.out, "dim.parquet")))
spark.stop()
print(f"wrote {args.rows} fact rows and {keys} dimension rows to {args.out}")
