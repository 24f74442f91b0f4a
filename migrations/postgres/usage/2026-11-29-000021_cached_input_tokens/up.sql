-- The part of `input_tokens` a provider read from a cache (a reused prefix) rather than
-- processed (issue 63). Records and rollups written before it was counted read 0.
ALTER TABLE usage_records ADD COLUMN cached_input_tokens BIGINT NOT NULL DEFAULT 0
    CHECK (cached_input_tokens >= 0);
ALTER TABLE usage_hourly ADD COLUMN cached_input_tokens BIGINT NOT NULL DEFAULT 0;

-- Reports sum it too: the covering index includes it, so they still read the index alone.
DROP INDEX usage_records_organization_id_created_at_idx;
CREATE INDEX usage_records_organization_id_created_at_idx
    ON usage_records (organization_id, created_at)
    INCLUDE (model_id, principal, input_tokens, output_tokens, reasoning_tokens,
             cached_input_tokens, credits);
