-- Rollup shards. Keep in step with migrations/postgres (same table, same columns); the
-- comments there describe it. SQLite cannot change a primary key: the table is rebuilt.
CREATE TABLE usage_hourly_sharded (
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    hour              TIMESTAMP NOT NULL,
    model_id          TEXT NOT NULL,
    input_tokens      BIGINT NOT NULL,
    output_tokens     BIGINT NOT NULL,
    reasoning_tokens  BIGINT NOT NULL,
    credits           BIGINT NOT NULL,
    requests          BIGINT NOT NULL,
    shard             SMALLINT NOT NULL DEFAULT 0,
    PRIMARY KEY (organization_id, hour, model_id, shard)
);
INSERT INTO usage_hourly_sharded
SELECT organization_id, hour, model_id, input_tokens, output_tokens, reasoning_tokens, credits,
       requests, 0
FROM usage_hourly;
DROP TABLE usage_hourly;
ALTER TABLE usage_hourly_sharded RENAME TO usage_hourly;
