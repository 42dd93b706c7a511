-- A band join: every order against a small table of price ranges (a non-equi condition, build side broadcast).
select band, count(*) as n, sum(o_totalprice) as total
from orders
join (select * from values (0.0, 50000.0, 'low'), (50000.0, 150000.0, 'mid'), (150000.0, 250000.0, 'high'),
                           (250000.0, 1e9, 'top') as b(lo, hi, band))
  on o_totalprice >= lo and o_totalprice < hi
group by band
