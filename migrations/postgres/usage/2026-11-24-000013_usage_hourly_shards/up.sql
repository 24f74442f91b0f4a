-- Each hour's rollup of an organization and model is spread over up to 32 rows (`shard`,
-- chosen from the usage record's id), which reports sum like any other rows. With one row,
-- every finishing completion of an organization upserted the same row and waited for the
-- previous transaction's commit to release it: under load the rollup serialized all
-- completions (docs/benchmarks.md, chat gateway).
ALTER TABLE usage_hourly ADD COLUMN shard SMALLINT NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly DROP CONSTRAINT usage_hourly_pkey;
ALTER TABLE usage_hourly ADD PRIMARY KEY (organization_id, hour, model_id, shard);
