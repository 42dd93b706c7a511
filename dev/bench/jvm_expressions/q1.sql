-- format_string (no native kernel) as an aggregate's argument: Spark's code evaluates it inside the native aggregate.
select l_returnflag, count(*) as n, max(format_string('%s-%05d', l_shipmode, l_linenumber)) as m
from lineitem
where l_quantity > 10
group by l_returnflag
order by l_returnflag
