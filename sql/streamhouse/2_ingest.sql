-- Part 2: `datagen` fills the dimensions and 20,000 orders in one statement set, then a lookup join (each order
-- looks up its customer and the customer's nation by primary key) fills `enriched_orders`. Batch mode.
SET 'execution.runtime-mode' = 'batch';

CREATE TEMPORARY TABLE default_catalog.default_database.gen_orders (
  order_key BIGINT, cust_key INT, total_price DECIMAL(15, 2), order_date DATE, clerk STRING
) WITH (
  'connector' = 'datagen', 'number-of-rows' = '20000',
  'fields.order_key.kind' = 'sequence', 'fields.order_key.start' = '1', 'fields.order_key.end' = '20000',
  'fields.cust_key.min' = '1', 'fields.cust_key.max' = '200', 'fields.clerk.length' = '10'
);

CREATE TEMPORARY TABLE default_catalog.default_database.gen_customer (
  cust_key INT, name STRING, nation_key INT, mktsegment STRING
) WITH (
  'connector' = 'datagen', 'number-of-rows' = '200',
  'fields.cust_key.kind' = 'sequence', 'fields.cust_key.start' = '1', 'fields.cust_key.end' = '200',
  'fields.nation_key.min' = '0', 'fields.nation_key.max' = '24',
  'fields.name.length' = '8', 'fields.mktsegment.length' = '8'
);

CREATE TEMPORARY TABLE default_catalog.default_database.gen_nation (nation_key INT, name STRING) WITH (
  'connector' = 'datagen', 'number-of-rows' = '25',
  'fields.nation_key.kind' = 'sequence', 'fields.nation_key.start' = '0', 'fields.nation_key.end' = '24',
  'fields.name.length' = '6'
);

EXECUTE STATEMENT SET
BEGIN
  INSERT INTO fluss_catalog.streamhouse.orders SELECT * FROM default_catalog.default_database.gen_orders;
  INSERT INTO fluss_catalog.streamhouse.customer SELECT * FROM default_catalog.default_database.gen_customer;
  INSERT INTO fluss_catalog.streamhouse.nation SELECT * FROM default_catalog.default_database.gen_nation;
END;

INSERT INTO fluss_catalog.streamhouse.enriched_orders
SELECT o.order_key, o.cust_key, o.total_price, o.order_date, c.name, c.mktsegment, n.name
FROM (SELECT *, PROCTIME() AS ptime FROM fluss_catalog.streamhouse.orders) AS o
LEFT JOIN fluss_catalog.streamhouse.customer FOR SYSTEM_TIME AS OF o.ptime AS c ON o.cust_key = c.cust_key
LEFT JOIN fluss_catalog.streamhouse.nation FOR SYSTEM_TIME AS OF o.ptime AS n ON c.nation_key = n.nation_key;
