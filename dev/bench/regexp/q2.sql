-- regexp_extract of a group: the clerk number without its leading zeros, grouped.
select regexp_extract(o_clerk, 'Clerk#0*(\\d+)', 1) as clerk, count(*) as n
from orders
group by regexp_extract(o_clerk, 'Clerk#0*(\\d+)', 1)
order by n desc, clerk
limit 10
