-- Split from `2026-11-27-000016_api_keys` when each domain got its own migrations
-- (docs/decisions/0035-storage-per-domain.md). A database that ran that migration runs
-- this again: it is written to be harmless a second time.
-- Usage records may name an API key as their principal.
ALTER TABLE usage_records DROP CONSTRAINT IF EXISTS usage_records_principal_kind_check;
ALTER TABLE usage_records ADD CONSTRAINT usage_records_principal_kind_check
    CHECK (principal_kind IN ('user', 'client', 'api_key'));
