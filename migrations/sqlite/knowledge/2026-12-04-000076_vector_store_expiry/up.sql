-- OpenAI's vector store expiry (issue 64): a dataset expires `expires_after_days` (1 to 365)
-- after it was last active, and is then refused for use (search, new files) until its
-- expiry changes or it is deleted; nothing is deleted automatically. NULL never expires.
ALTER TABLE datasets ADD COLUMN expires_after_days INTEGER
    CHECK (expires_after_days BETWEEN 1 AND 365);
-- When the dataset was last used (created, searched, given or relieved of a file, given a
-- new expiry); existing datasets start from their last change. SQLite adds a NOT NULL
-- column only with a default; every insert names the column, so the default is never used.
ALTER TABLE datasets ADD COLUMN last_active_at TIMESTAMP NOT NULL DEFAULT '1970-01-01 00:00:00';
UPDATE datasets SET last_active_at = updated_at;
