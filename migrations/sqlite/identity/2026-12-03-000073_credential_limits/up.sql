-- Limits of credentials. Keep in step with migrations/postgres (same table, same columns);
-- the comments there describe the columns.
CREATE TABLE credential_limits (
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    credential        TEXT NOT NULL CHECK (length(credential) BETWEEN 1 AND 64),
    models            TEXT NULL,
    budget_credits    BIGINT NULL CHECK (budget_credits > 0),
    budget_period     TEXT NULL CHECK (budget_period IN ('day', 'week', 'month')),
    budget_on_spent   TEXT NULL CHECK (budget_on_spent IN ('refuse')),
    updated_at        TIMESTAMP NOT NULL,
    PRIMARY KEY (organization_id, credential),
    CHECK ((budget_credits IS NULL) = (budget_period IS NULL)
        AND (budget_credits IS NULL) = (budget_on_spent IS NULL))
);
