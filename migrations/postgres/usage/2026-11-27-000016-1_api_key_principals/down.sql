DELETE FROM usage_records WHERE principal_kind = 'api_key';
ALTER TABLE usage_records DROP CONSTRAINT usage_records_principal_kind_check;
ALTER TABLE usage_records ADD CONSTRAINT usage_records_principal_kind_check
    CHECK (principal_kind IN ('user', 'client'));
