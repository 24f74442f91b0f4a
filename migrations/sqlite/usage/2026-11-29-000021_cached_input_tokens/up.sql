-- Cached input tokens. Keep in step with migrations/postgres (same columns); the comments
-- there describe them.
ALTER TABLE usage_records ADD COLUMN cached_input_tokens BIGINT NOT NULL DEFAULT 0
    CHECK (cached_input_tokens >= 0);
ALTER TABLE usage_hourly ADD COLUMN cached_input_tokens BIGINT NOT NULL DEFAULT 0;
