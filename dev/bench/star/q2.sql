-- Star join, dimension filtered on a column uncorrelated with the key (1% of the keys, scattered): no row group
-- can prune; only a filter on the keys themselves drops fact rows.
SELECT d.category, COUNT(*) AS n, SUM(f.amount) AS amount
FROM fact f JOIN dim d ON f.k = d.k
WHERE d.category = 'c7'
GROUP BY d.category
