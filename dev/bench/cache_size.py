"""Memory and build time of a cached table: eleven lineitem columns cached with CACHE TABLE, with the cache
serializer the application starts with (Ember's by default with the plugin; Spark's own with
spark.ember.cache.enabled=false, a static key). docs/benchmarks.md, "Cached tables".

    dev/bench/submit.sh cache_size dev/work/tpch/sf1
    BENCH_CONF=spark.ember.cache.enabled=false dev/bench/submit.sh cache_size dev/work/tpch/sf1
"""
import sys
import time

from pyspark.sql import SparkSession


def main():
    spark = SparkSession.builder.getOrCreate()
    spark.read.parquet(f"{sys.argv[1]}/lineitem.parquet").createOrReplaceTempView("lineitem")
    serializer = spark.conf.get("spark.sql.cache.serializer").split(".")[-1]
    t0 = time.perf_counter()
    spark.sql("""CACHE TABLE lineitem_c AS
        SELECT l_orderkey, l_quantity, l_extendedprice, l_discount, l_tax, l_returnflag, l_linestatus, l_shipdate,
               l_commitdate, l_receiptdate, l_shipmode
        FROM lineitem""")
    built = time.perf_counter() - t0
    for info in spark.sparkContext._jsc.sc().getRDDStorageInfo():
        print(f"{serializer}: built in {built:.1f} s, {info.memSize() / 1e6:.0f} MB in memory, "
              f"{info.diskSize() / 1e6:.0f} MB on disk, {info.numCachedPartitions()} partitions")


if __name__ == "__main__":
    main()
