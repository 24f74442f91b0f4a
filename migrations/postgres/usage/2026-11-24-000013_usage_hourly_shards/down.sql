-- Folds the shards of every hour back into one row.
CREATE TEMPORARY TABLE usage_hourly_folded AS
SELECT organization_id, hour, model_id, SUM(input_tokens) AS input_tokens,
       SUM(output_tokens) AS output_tokens, SUM(reasoning_tokens) AS reasoning_tokens,
       SUM(credits) AS credits, SUM(requests) AS requests
FROM usage_hourly
GROUP BY organization_id, hour, model_id;
DELETE FROM usage_hourly;
ALTER TABLE usage_hourly DROP CONSTRAINT usage_hourly_pkey;
ALTER TABLE usage_hourly DROP COLUMN shard;
ALTER TABLE usage_hourly ADD PRIMARY KEY (organization_id, hour, model_id);
INSERT INTO usage_hourly
SELECT organization_id, hour, model_id, input_tokens, output_tokens, reasoning_tokens, credits,
       requests
FROM usage_hourly_folded;
DROP TABLE usage_hourly_folded;
