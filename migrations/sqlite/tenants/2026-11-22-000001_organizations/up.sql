-- Tenants. Keep in step with migrations/postgres (same tables, same columns).
CREATE TABLE organizations (
    id          TEXT PRIMARY KEY NOT NULL CHECK (length(id) BETWEEN 1 AND 64),
    name        TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    plan        TEXT NOT NULL DEFAULT 'free' CHECK (plan IN ('free', 'pro', 'enterprise')),
    created_at  TIMESTAMP NOT NULL,
    updated_at  TIMESTAMP NOT NULL
);
