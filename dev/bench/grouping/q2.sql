-- CUBE over orders (8 grouping sets), a date bucket among the keys.
select o_orderstatus, o_orderpriority, year(o_orderdate) as y, sum(o_totalprice) as total, count(*) as n,
       grouping_id() as gid
from orders
group by cube (o_orderstatus, o_orderpriority, year(o_orderdate))
