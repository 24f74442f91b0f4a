-- Answers from the response cache (no provider called, 0 credits): a record says whether
-- its answer came from the cache, and the rollups count such requests. Records and rollups
-- written before it read false and 0.
ALTER TABLE usage_records ADD COLUMN cached BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE usage_hourly ADD COLUMN cached_requests BIGINT NOT NULL DEFAULT 0;

-- Reports count it too: the covering index includes it, so they still read the index alone.
DROP INDEX usage_records_organization_id_created_at_idx;
CREATE INDEX usage_records_organization_id_created_at_idx
    ON usage_records (organization_id, created_at)
    INCLUDE (model_id, principal, input_tokens, output_tokens, reasoning_tokens,
             cached_input_tokens, credits, cached);
