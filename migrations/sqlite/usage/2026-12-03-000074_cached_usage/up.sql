-- Answers from the response cache. Keep in step with migrations/postgres (same columns);
-- the comments there describe them.
ALTER TABLE usage_records ADD COLUMN cached BOOLEAN NOT NULL DEFAULT false
    CHECK (cached IN (0, 1));
ALTER TABLE usage_hourly ADD COLUMN cached_requests BIGINT NOT NULL DEFAULT 0;
