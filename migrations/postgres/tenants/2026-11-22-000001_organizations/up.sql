-- Tenants. Timestamps are UTC in `timestamp` columns so one diesel schema serves
-- PostgreSQL and SQLite (docs/decisions/0003-one-diesel-store-for-both-databases.md).
CREATE TABLE organizations (
    id          TEXT PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 64),
    name        TEXT NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
    plan        TEXT NOT NULL DEFAULT 'free' CHECK (plan IN ('free', 'pro', 'enterprise')),
    created_at  TIMESTAMP NOT NULL,
    updated_at  TIMESTAMP NOT NULL
);
