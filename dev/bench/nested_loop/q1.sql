-- Single-row aggregates joined without keys (TPC-DS q28 / q88 shape): cross joins of one-row broadcasts.
select *
from (select avg(l_extendedprice) as p1, count(*) as c1 from lineitem where l_quantity between 0 and 10) a,
     (select avg(l_extendedprice) as p2, count(*) as c2 from lineitem where l_quantity between 11 and 20) b,
     (select avg(l_extendedprice) as p3, count(*) as c3 from lineitem where l_quantity between 21 and 30) c
