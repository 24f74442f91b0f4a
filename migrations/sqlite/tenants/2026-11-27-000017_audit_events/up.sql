-- The audit log. Keep in step with migrations/postgres (same table, same columns); the
-- comments there describe the columns.
CREATE TABLE audit_events (
    id              TEXT PRIMARY KEY NOT NULL CHECK (length(id) BETWEEN 1 AND 64),
    organization_id TEXT NULL REFERENCES organizations (id),
    occurred_at     TIMESTAMP NOT NULL,
    actor_kind      TEXT NOT NULL
        CHECK (actor_kind IN ('user', 'client', 'api_key', 'operator', 'system', 'anonymous')),
    actor_id        TEXT NULL CHECK (length(actor_id) BETWEEN 1 AND 255),
    action          TEXT NOT NULL CHECK (length(action) BETWEEN 1 AND 64),
    resource_type   TEXT NOT NULL CHECK (length(resource_type) BETWEEN 1 AND 64),
    resource_id     TEXT NULL CHECK (length(resource_id) BETWEEN 1 AND 255),
    address         TEXT NULL CHECK (length(address) BETWEEN 1 AND 64),
    request_id      TEXT NULL CHECK (length(request_id) BETWEEN 1 AND 128)
);

CREATE INDEX audit_events_organization_id_id_idx ON audit_events (organization_id, id);
CREATE INDEX audit_events_occurred_at_idx ON audit_events (occurred_at);

CREATE TRIGGER audit_events_append_only BEFORE UPDATE ON audit_events
BEGIN
    SELECT RAISE(ABORT, 'audit events are append-only');
END;
