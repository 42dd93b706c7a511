-- Star join, dimension filtered on a column correlated with the key (each region is a contiguous 1% of the
-- keys): Spark cannot derive a key predicate from it; the fact table's row groups can prune by key bounds.
SELECT d.region, COUNT(*) AS n, SUM(f.amount) AS amount
FROM fact f JOIN dim d ON f.k = d.k
WHERE d.region = 'r42'
GROUP BY d.region
