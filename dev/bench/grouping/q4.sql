-- GROUPING SETS with the empty set, joined to a dimension first.
select n_name, c_mktsegment, count(*) as n, sum(c_acctbal) as bal
from customer join nation on c_nationkey = n_nationkey
group by grouping sets ((n_name, c_mktsegment), (c_mktsegment), ())
