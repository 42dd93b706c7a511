-- ROLLUP over lineitem's flags and ship mode: an Expand of 4 projections under a grouped aggregate.
select l_returnflag, l_linestatus, l_shipmode, sum(l_quantity) as qty, sum(l_extendedprice) as price,
       count(*) as n, grouping_id() as gid
from lineitem
group by rollup (l_returnflag, l_linestatus, l_shipmode)
