-- split and element_at: the clerk number out of 'Clerk#000000123', grouped.
select element_at(split(o_clerk, '#'), 2) as clerk, count(*) as n
from orders
group by element_at(split(o_clerk, '#'), 2)
order by n desc, clerk
limit 10
