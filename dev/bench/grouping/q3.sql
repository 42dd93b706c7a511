-- Two DISTINCT aggregates beside a plain one: Spark's distinct-aggregate rewrite (Expand, then two aggregates).
select l_shipmode, count(distinct l_partkey) as parts, count(distinct l_suppkey) as suppliers,
       sum(l_quantity) as qty
from lineitem
group by l_shipmode
