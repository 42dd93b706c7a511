-- rlike over orders' comments (TPC-H Q13's '%special%requests%' as a Java pattern): a filter and a count.
select count(*) as n from orders where o_comment rlike 'special.*requests'
