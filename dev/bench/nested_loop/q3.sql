-- A multi-column NOT IN (Spark plans a left anti nested-loop join, NULL-aware through its condition).
select c_mktsegment, count(*) as n
from customer
where (c_nationkey, c_mktsegment) not in (select n_nationkey, 'BUILDING' from nation where n_regionkey = 1)
group by c_mktsegment
