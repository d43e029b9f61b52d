-- The streamhouse walk-through (`make demo`), part 1: lake-enabled tables in the Fluss catalog.
-- `orders` is a log table of order events; `enriched_orders` a primary-key table kept up to date by a lookup
-- join; both are tiered into Paimon (`table.datalake.enabled`). `customer` and `nation` are the dimensions, looked up through a partial cache.
CREATE DATABASE IF NOT EXISTS fluss_catalog.streamhouse;

CREATE TABLE IF NOT EXISTS fluss_catalog.streamhouse.orders (
  order_key   BIGINT NOT NULL,
  cust_key    INT NOT NULL,
  total_price DECIMAL(15, 2),
  order_date  DATE,
  clerk       STRING
) WITH ('bucket.num' = '3', 'bucket.key' = 'order_key',
        'table.datalake.enabled' = 'true', 'table.datalake.freshness' = '30s');

CREATE TABLE IF NOT EXISTS fluss_catalog.streamhouse.customer (
  cust_key   INT NOT NULL,
  name       STRING,
  nation_key INT NOT NULL,
  mktsegment STRING,
  PRIMARY KEY (cust_key) NOT ENFORCED
) WITH ('bucket.num' = '2', 'lookup.cache' = 'PARTIAL', 'lookup.partial-cache.max-rows' = '10000',
        'lookup.partial-cache.expire-after-write' = '1min');

CREATE TABLE IF NOT EXISTS fluss_catalog.streamhouse.nation (
  nation_key INT NOT NULL,
  name       STRING,
  PRIMARY KEY (nation_key) NOT ENFORCED
) WITH ('bucket.num' = '1', 'lookup.cache' = 'PARTIAL', 'lookup.partial-cache.max-rows' = '100',
        'lookup.partial-cache.expire-after-write' = '1min');

CREATE TABLE IF NOT EXISTS fluss_catalog.streamhouse.enriched_orders (
  order_key   BIGINT NOT NULL,
  cust_key    INT NOT NULL,
  total_price DECIMAL(15, 2),
  order_date  DATE,
  cust_name   STRING,
  mktsegment  STRING,
  nation_name STRING,
  PRIMARY KEY (order_key) NOT ENFORCED
) WITH ('bucket.num' = '3', 'table.datalake.enabled' = 'true', 'table.datalake.freshness' = '30s');
