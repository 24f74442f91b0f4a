-- API clients of organizations. Keep in step with migrations/postgres (same tables, same columns).
CREATE TABLE clients (
    id                 TEXT PRIMARY KEY NOT NULL CHECK (length(id) BETWEEN 1 AND 64),
    organization_id    TEXT NOT NULL REFERENCES organizations (id),
    name               TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    scopes             TEXT NOT NULL,
    secret_hash        TEXT NOT NULL,
    secret_generation  INTEGER NOT NULL CHECK (secret_generation >= 1),
    revoked_at         TIMESTAMP NULL,
    created_at         TIMESTAMP NOT NULL,
    updated_at         TIMESTAMP NOT NULL
);

-- Tenant-scoped keyset listing: WHERE organization_id = ? AND id > ? ORDER BY id.
CREATE INDEX clients_organization_id_id_idx ON clients (organization_id, id);
