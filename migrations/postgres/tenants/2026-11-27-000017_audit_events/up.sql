-- The audit log (docs/decisions/0026-audit-log.md): one row per change made through the API or
-- the admin CLI, written in the transaction of the change, and one per refused credential.
-- Append-only: rows are never updated (a trigger refuses it); retention deletes old ones.
-- `organization_id` is NULL only for refused credentials whose organization is unknown.
-- `actor_id` is the principal's subject, client id or key id, or the operator's name; NULL for
-- an anonymous caller. `address` is the client's address, `request_id` the request's id.
-- No column ever holds a secret or a presented credential.
CREATE TABLE audit_events (
    id              TEXT PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 64),
    organization_id TEXT NULL REFERENCES organizations (id),
    occurred_at     TIMESTAMP NOT NULL,
    actor_kind      TEXT NOT NULL
        CHECK (actor_kind IN ('user', 'client', 'api_key', 'operator', 'system', 'anonymous')),
    actor_id        TEXT NULL CHECK (char_length(actor_id) BETWEEN 1 AND 255),
    action          TEXT NOT NULL CHECK (char_length(action) BETWEEN 1 AND 64),
    resource_type   TEXT NOT NULL CHECK (char_length(resource_type) BETWEEN 1 AND 64),
    resource_id     TEXT NULL CHECK (char_length(resource_id) BETWEEN 1 AND 255),
    address         TEXT NULL CHECK (char_length(address) BETWEEN 1 AND 64),
    request_id      TEXT NULL CHECK (char_length(request_id) BETWEEN 1 AND 128)
);

-- Tenant-scoped keyset listing, newest first: WHERE organization_id = ? AND id < ? ORDER BY
-- id DESC (ids are UUIDv7: they sort by creation).
CREATE INDEX audit_events_organization_id_id_idx ON audit_events (organization_id, id);
-- Retention: DELETE … WHERE occurred_at < ?.
CREATE INDEX audit_events_occurred_at_idx ON audit_events (occurred_at);

CREATE FUNCTION audit_events_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'audit events are append-only';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER audit_events_append_only BEFORE UPDATE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();
