-- The Fluss catalog: every Fluss database/table is visible in Flink, tables created here are Fluss tables.
CREATE CATALOG fluss_catalog WITH (
  'type' = 'fluss',
  'bootstrap.servers' = '127.0.0.1:9123'
);

USE CATALOG fluss_catalog;

CREATE DATABASE IF NOT EXISTS quickstart;

USE quickstart;
