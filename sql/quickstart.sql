-- Fluss's Flink quickstart with `datagen` in place of faker (run after catalog.sql, or with `fluss sql`):
-- three primary-key tables filled by one statement set, an enriched table filled by a lookup join on two of
-- them, then queries, an UPDATE and a DELETE. Batch mode, so every job ends by itself.
SET 'execution.runtime-mode' = 'batch';
SET 'sql-client.execution.result-mode' = 'tableau';

CREATE DATABASE IF NOT EXISTS fluss_catalog.quickstart;

CREATE TABLE IF NOT EXISTS fluss_catalog.quickstart.fluss_order (
  order_key      BIGINT NOT NULL,
  cust_key       INT NOT NULL,
  total_price    DECIMAL(15, 2),
  order_date     DATE,
  order_priority STRING,
  clerk          STRING,
  PRIMARY KEY (order_key) NOT ENFORCED
) WITH ('bucket.num' = '3');

CREATE TABLE IF NOT EXISTS fluss_catalog.quickstart.fluss_customer (
  cust_key   INT NOT NULL,
  name       STRING,
  phone      STRING,
  nation_key INT NOT NULL,
  acctbal    DECIMAL(15, 2),
  mktsegment STRING,
  PRIMARY KEY (cust_key) NOT ENFORCED
) WITH ('bucket.num' = '2');

CREATE TABLE IF NOT EXISTS fluss_catalog.quickstart.fluss_nation (
  nation_key INT NOT NULL,
  name       STRING,
  PRIMARY KEY (nation_key) NOT ENFORCED
);

CREATE TABLE IF NOT EXISTS fluss_catalog.quickstart.enriched_orders (
  order_key       BIGINT NOT NULL,
  cust_key        INT NOT NULL,
  total_price     DECIMAL(15, 2),
  order_date      DATE,
  order_priority  STRING,
  clerk           STRING,
  cust_name       STRING,
  cust_phone      STRING,
  cust_acctbal    DECIMAL(15, 2),
  cust_mktsegment STRING,
  nation_name     STRING,
  PRIMARY KEY (order_key) NOT ENFORCED
) WITH ('bucket.num' = '3');

CREATE TEMPORARY TABLE default_catalog.default_database.source_order (
  order_key BIGINT, cust_key INT, total_price DECIMAL(15, 2), order_date DATE, order_priority STRING, clerk STRING
) WITH (
  'connector' = 'datagen', 'number-of-rows' = '10000',
  'fields.order_key.kind' = 'sequence', 'fields.order_key.start' = '1', 'fields.order_key.end' = '10000',
  'fields.cust_key.min' = '1', 'fields.cust_key.max' = '100',
  'fields.order_priority.length' = '6', 'fields.clerk.length' = '10'
);

CREATE TEMPORARY TABLE default_catalog.default_database.source_customer (
  cust_key INT, name STRING, phone STRING, nation_key INT, acctbal DECIMAL(15, 2), mktsegment STRING
) WITH (
  'connector' = 'datagen', 'number-of-rows' = '100',
  'fields.cust_key.kind' = 'sequence', 'fields.cust_key.start' = '1', 'fields.cust_key.end' = '100',
  'fields.nation_key.min' = '0', 'fields.nation_key.max' = '24',
  'fields.name.length' = '8', 'fields.phone.length' = '12', 'fields.mktsegment.length' = '8'
);

CREATE TEMPORARY TABLE default_catalog.default_database.source_nation (nation_key INT, name STRING) WITH (
  'connector' = 'datagen', 'number-of-rows' = '25',
  'fields.nation_key.kind' = 'sequence', 'fields.nation_key.start' = '0', 'fields.nation_key.end' = '24',
  'fields.name.length' = '6'
);

EXECUTE STATEMENT SET
BEGIN
  INSERT INTO fluss_catalog.quickstart.fluss_order SELECT * FROM default_catalog.default_database.source_order;
  INSERT INTO fluss_catalog.quickstart.fluss_customer SELECT * FROM default_catalog.default_database.source_customer;
  INSERT INTO fluss_catalog.quickstart.fluss_nation SELECT * FROM default_catalog.default_database.source_nation;
END;

-- the lookup join: each order looks up its customer (Lookup by primary key) and the customer's nation
INSERT INTO fluss_catalog.quickstart.enriched_orders
SELECT o.order_key, o.cust_key, o.total_price, o.order_date, o.order_priority, o.clerk,
       c.name, c.phone, c.acctbal, c.mktsegment, n.name
FROM (SELECT *, PROCTIME() AS ptime FROM fluss_catalog.quickstart.fluss_order) AS o
LEFT JOIN fluss_catalog.quickstart.fluss_customer FOR SYSTEM_TIME AS OF o.ptime AS c ON o.cust_key = c.cust_key
LEFT JOIN fluss_catalog.quickstart.fluss_nation FOR SYSTEM_TIME AS OF o.ptime AS n ON c.nation_key = n.nation_key;

SELECT * FROM fluss_catalog.quickstart.enriched_orders LIMIT 10;
SELECT COUNT(*) AS orders FROM fluss_catalog.quickstart.enriched_orders;
SELECT * FROM fluss_catalog.quickstart.enriched_orders WHERE order_key = 42;

UPDATE fluss_catalog.quickstart.enriched_orders SET cust_name = 'renamed' WHERE order_key = 42;
DELETE FROM fluss_catalog.quickstart.enriched_orders WHERE order_key = 43;
SELECT order_key, cust_name FROM fluss_catalog.quickstart.enriched_orders WHERE order_key IN (42, 43);
