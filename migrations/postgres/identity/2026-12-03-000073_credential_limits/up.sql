-- Limits of credentials (tessera_identity::CredentialLimits): at most one row per API key
-- (`credential` 'key_…') or client ('cli_…') of an organization. No foreign key, as the
-- credential is one of two tables; a revoked credential's row stays with it (it is never
-- read again). `models` is the model allow-list as a JSON array of model ids (NULL: every
-- model the organization may use); `budget_credits`, `budget_period` ('day', 'week',
-- 'month', UTC calendar periods) and `budget_on_spent` ('refuse') are all set or all NULL.
CREATE TABLE credential_limits (
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    credential        TEXT NOT NULL CHECK (char_length(credential) BETWEEN 1 AND 64),
    models            TEXT NULL,
    budget_credits    BIGINT NULL CHECK (budget_credits > 0),
    budget_period     TEXT NULL CHECK (budget_period IN ('day', 'week', 'month')),
    budget_on_spent   TEXT NULL CHECK (budget_on_spent IN ('refuse')),
    updated_at        TIMESTAMP NOT NULL,
    PRIMARY KEY (organization_id, credential),
    CHECK ((budget_credits IS NULL) = (budget_period IS NULL)
        AND (budget_credits IS NULL) = (budget_on_spent IS NULL))
);
