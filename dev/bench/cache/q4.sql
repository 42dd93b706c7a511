-- Orders per priority and month from the cached orders: a string key and a date function.
select o_orderpriority, year(o_orderdate) as y, count(*) as n
from orders_c
group by o_orderpriority, year(o_orderdate)
order by o_orderpriority, y
