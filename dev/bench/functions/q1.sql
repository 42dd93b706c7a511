-- date_format of a date column (through Spark's cast to timestamp): shipments per month, as a report would.
select date_format(l_shipdate, 'yyyy-MM') as month, count(*) as n, sum(l_quantity) as qty
from lineitem
group by date_format(l_shipdate, 'yyyy-MM')
order by month
