-- Nondeterministic functions in a projection: row ids and a seeded sample of lineitem, summed.
select sum(id % 7) as ids, count(*) as sampled, sum(l_quantity) as qty
from (select monotonically_increasing_id() as id, rand(42) as r, l_quantity from lineitem) t
where r < 0.1
