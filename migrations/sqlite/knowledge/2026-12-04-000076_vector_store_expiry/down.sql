ALTER TABLE datasets DROP COLUMN last_active_at;
ALTER TABLE datasets DROP COLUMN expires_after_days;
