-- format_string in a projection between a scan and a join, filtered on its result.
select o_orderpriority, count(*) as n
from orders
join (select l_orderkey, format_string('%s|%s', l_shipinstruct, l_comment) as c
      from lineitem
      where l_commitdate < l_receiptdate) l
  on o_orderkey = l_orderkey
where length(c) > 40
group by o_orderpriority
order by o_orderpriority
