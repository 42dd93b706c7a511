-- get_json_object (no native kernel) in a filter over the lineitem scan.
select count(*) as n, sum(l_extendedprice) as revenue
from lineitem
where get_json_object(concat('{"m":"', l_shipmode, '","q":', cast(l_quantity as string), '}'), '$.m') = 'AIR'
