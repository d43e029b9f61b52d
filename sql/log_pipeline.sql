-- A small batch pipeline on a log table (run after catalog.sql).
SET 'execution.runtime-mode' = 'batch';
SET 'sql-client.execution.result-mode' = 'tableau';

CREATE TABLE IF NOT EXISTS fluss_catalog.quickstart.page_views (
  view_id   BIGINT,
  user_id   BIGINT,
  url       STRING,
  duration  DOUBLE,
  view_time TIMESTAMP(3),
  country   STRING
) PARTITIONED BY (country) WITH (
  'bucket.num' = '3',
  'bucket.key' = 'user_id',
  'table.log.ttl' = '7d'
);

CREATE TEMPORARY TABLE default_catalog.default_database.page_view_source (
  view_id   BIGINT,
  user_id   BIGINT,
  url       STRING,
  duration  DOUBLE,
  view_time TIMESTAMP(3)
) WITH (
  'connector' = 'datagen',
  'number-of-rows' = '10000',
  'fields.view_id.kind' = 'sequence',
  'fields.view_id.start' = '1',
  'fields.view_id.end' = '10000',
  'fields.user_id.min' = '1',
  'fields.user_id.max' = '500',
  'fields.url.length' = '12',
  'fields.duration.min' = '0.5',
  'fields.duration.max' = '300'
);

-- the partitions (US, DE, JP) are created by the sink as needed
INSERT INTO fluss_catalog.quickstart.page_views
SELECT view_id, user_id, url, duration, view_time,
       CASE MOD(view_id, 3) WHEN 0 THEN 'US' WHEN 1 THEN 'DE' ELSE 'JP' END
FROM default_catalog.default_database.page_view_source;

-- batch reads stop at the offsets that were current when the query started
SELECT COUNT(*) AS view_count, COUNT(DISTINCT user_id) AS user_count FROM fluss_catalog.quickstart.page_views;

-- projection pushdown: the tablet servers return only these two columns
SELECT country, ROUND(AVG(duration), 1) AS avg_duration
FROM fluss_catalog.quickstart.page_views
GROUP BY country
ORDER BY country
LIMIT 10;
