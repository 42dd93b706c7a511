-- format_string (no native kernel) as a join key: Spark's code evaluates it inside the native join and the
-- exchanges that hash it.
select count(*) as n, sum(o_totalprice) as total
from orders
join (select distinct format_string('%08d', cast(l_orderkey as int)) as k
      from lineitem
      where l_shipmode = 'AIR') l
  on format_string('%08d', cast(o_orderkey as int)) = l.k
