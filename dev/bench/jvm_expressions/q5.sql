-- format_string (no native kernel) as the sort key of a top-k: evaluated inside the native sort.
select o_orderkey, o_totalprice
from orders
order by format_string('%s/%s', o_orderpriority, o_clerk) desc, o_orderkey
limit 20
