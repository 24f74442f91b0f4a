-- API clients of organizations: machine credentials with assigned scopes and the hash of
-- their current secret. `scopes` is the canonical space-separated scope list (may be empty);
-- `secret_generation` increases with every rotation. Timestamps are UTC in `timestamp`
-- columns (docs/decisions/0003-one-diesel-store-for-both-databases.md).
CREATE TABLE clients (
    id                 TEXT PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 64),
    organization_id    TEXT NOT NULL REFERENCES organizations (id),
    name               TEXT NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
    scopes             TEXT NOT NULL,
    secret_hash        TEXT NOT NULL,
    secret_generation  INTEGER NOT NULL CHECK (secret_generation >= 1),
    revoked_at         TIMESTAMP NULL,
    created_at         TIMESTAMP NOT NULL,
    updated_at         TIMESTAMP NOT NULL
);

-- Tenant-scoped keyset listing: WHERE organization_id = ? AND id > ? ORDER BY id.
CREATE INDEX clients_organization_id_id_idx ON clients (organization_id, id);
