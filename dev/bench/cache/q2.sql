-- TPC-H Q6 over the cached lineitem: a selective filter and one sum (batch statistics on l_shipdate).
select sum(l_extendedprice * l_discount) as revenue
from lineitem_c
where l_shipdate >= date '1994-01-01' and l_shipdate < date '1994-01-01' + interval '1' year
  and l_discount between 0.06 - 0.01 and 0.06 + 0.01 and l_quantity < 24
