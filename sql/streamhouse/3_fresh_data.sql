-- Part 3, after the tiering job ran: 5,000 more orders (enriched by the same lookup join), one enriched order
-- updated and one deleted. These changes are in the Fluss log only, until the next tiering round.
SET 'execution.runtime-mode' = 'batch';

CREATE TEMPORARY TABLE default_catalog.default_database.gen_more_orders (
  order_key BIGINT, cust_key INT, total_price DECIMAL(15, 2), order_date DATE, clerk STRING
) WITH (
  'connector' = 'datagen', 'number-of-rows' = '5000',
  'fields.order_key.kind' = 'sequence', 'fields.order_key.start' = '20001', 'fields.order_key.end' = '25000',
  'fields.cust_key.min' = '1', 'fields.cust_key.max' = '200', 'fields.clerk.length' = '10'
);

INSERT INTO fluss_catalog.streamhouse.orders SELECT * FROM default_catalog.default_database.gen_more_orders;

INSERT INTO fluss_catalog.streamhouse.enriched_orders
SELECT o.order_key, o.cust_key, o.total_price, o.order_date, c.name, c.mktsegment, n.name
FROM (SELECT *, PROCTIME() AS ptime FROM fluss_catalog.streamhouse.orders WHERE order_key > 20000) AS o
LEFT JOIN fluss_catalog.streamhouse.customer FOR SYSTEM_TIME AS OF o.ptime AS c ON o.cust_key = c.cust_key
LEFT JOIN fluss_catalog.streamhouse.nation FOR SYSTEM_TIME AS OF o.ptime AS n ON c.nation_key = n.nation_key;

UPDATE fluss_catalog.streamhouse.enriched_orders SET cust_name = 'renamed' WHERE order_key = 7;
DELETE FROM fluss_catalog.streamhouse.enriched_orders WHERE order_key = 8;
