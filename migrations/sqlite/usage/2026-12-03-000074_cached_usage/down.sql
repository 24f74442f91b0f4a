ALTER TABLE usage_hourly DROP COLUMN cached_requests;
ALTER TABLE usage_records DROP COLUMN cached;
