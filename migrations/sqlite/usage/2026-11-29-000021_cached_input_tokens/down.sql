ALTER TABLE usage_hourly DROP COLUMN cached_input_tokens;
ALTER TABLE usage_records DROP COLUMN cached_input_tokens;
