DROP INDEX usage_records_organization_id_created_at_idx;
ALTER TABLE usage_hourly DROP COLUMN cached_requests;
ALTER TABLE usage_records DROP COLUMN cached;
CREATE INDEX usage_records_organization_id_created_at_idx
    ON usage_records (organization_id, created_at)
    INCLUDE (model_id, principal, input_tokens, output_tokens, reasoning_tokens,
             cached_input_tokens, credits);
