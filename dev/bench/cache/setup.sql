-- Cached once per session before timing (CACHE TABLE is eager): lineitem's columns the queries read, and orders.
CACHE TABLE lineitem_c AS
SELECT l_orderkey, l_quantity, l_extendedprice, l_discount, l_tax, l_returnflag, l_linestatus, l_shipdate,
       l_commitdate, l_receiptdate, l_shipmode
FROM lineitem;
CACHE TABLE orders_c AS SELECT o_orderkey, o_orderpriority, o_orderdate FROM orders
