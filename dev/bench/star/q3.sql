-- The same filter as a semi join.
SELECT COUNT(*) AS n, SUM(amount) AS amount
FROM fact
WHERE k IN (SELECT k FROM dim WHERE region = 'r42')
