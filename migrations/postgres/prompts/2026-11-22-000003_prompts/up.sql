-- Particles: reusable system-prompt components, owned by an organization or, with a NULL
-- `organization_id`, by the system (read-only templates every organization can read).
-- `slug` names a system particle stably (NULL for organizations' particles; NULLs do not
-- collide in the unique index). `latest_version` is the number of the newest row in
-- `particle_versions`. Deletion is soft (`deleted_at`): a deleted particle is invisible to
-- every read, but its versions stay so that past compositions remain exact. Timestamps are
-- UTC in `timestamp` columns (docs/decisions/0003-one-diesel-store-for-both-databases.md).
CREATE TABLE particles (
    id               TEXT PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 64),
    organization_id  TEXT NULL REFERENCES organizations (id),
    slug             TEXT NULL CHECK (char_length(slug) BETWEEN 1 AND 255),
    name             TEXT NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
    category         TEXT NOT NULL
                     CHECK (category IN ('role', 'tone', 'guardrails', 'constraints', 'format')),
    description      TEXT NOT NULL CHECK (char_length(description) <= 1000),
    latest_version   INTEGER NOT NULL CHECK (latest_version >= 1),
    created_at       TIMESTAMP NOT NULL,
    updated_at       TIMESTAMP NOT NULL,
    deleted_at       TIMESTAMP NULL
);

-- System particles are found by slug (seeding); two particles never share one.
CREATE UNIQUE INDEX particles_slug_idx ON particles (slug);
-- Owner-scoped keyset listing: WHERE organization_id = ? (or IS NULL) AND id > ? ORDER BY id.
CREATE INDEX particles_organization_id_id_idx ON particles (organization_id, id);

-- The immutable, numbered versions of a particle's content (numbered from 1, no gaps).
-- The unique key serves version lookups, keyset listing and "latest version at a time".
CREATE TABLE particle_versions (
    id           TEXT PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 64),
    particle_id  TEXT NOT NULL REFERENCES particles (id),
    number       INTEGER NOT NULL CHECK (number >= 1),
    content      TEXT NOT NULL CHECK (char_length(content) BETWEEN 1 AND 32768),
    token_count  INTEGER NOT NULL CHECK (token_count >= 0),
    created_at   TIMESTAMP NOT NULL,
    UNIQUE (particle_id, number),
    -- Target of the placements' pin reference (a pin names a version of its own particle).
    UNIQUE (id, particle_id, number)
);

-- System prompts: arrangements of particles, owned like particles (NULL `organization_id`:
-- a system profile, named by its unique `slug`).
CREATE TABLE system_prompts (
    id               TEXT PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 64),
    organization_id  TEXT NULL REFERENCES organizations (id),
    slug             TEXT NULL CHECK (char_length(slug) BETWEEN 1 AND 255),
    name             TEXT NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
    description      TEXT NOT NULL CHECK (char_length(description) <= 1000),
    enabled          BOOLEAN NOT NULL,
    created_at       TIMESTAMP NOT NULL,
    updated_at       TIMESTAMP NOT NULL
);

CREATE UNIQUE INDEX system_prompts_slug_idx ON system_prompts (slug);
-- Owner-scoped keyset listing, as for particles.
CREATE INDEX system_prompts_organization_id_id_idx ON system_prompts (organization_id, id);

-- The placements of particles in system prompts, as a history: each row is one placement
-- (`association_id`) with one order and pin, in effect from `valid_from` until `valid_to`
-- (exclusive; NULL while current). Changing a placement closes its current row and opens a
-- new one; removing it closes the row. A NULL pin follows the particle's latest version;
-- a pin names one version of the placed particle (`pinned_version_id` and its number).
-- Rows go with their system prompt; particles are never hard-deleted.
CREATE TABLE system_prompt_particles (
    association_id     TEXT NOT NULL CHECK (char_length(association_id) BETWEEN 1 AND 64),
    system_prompt_id   TEXT NOT NULL REFERENCES system_prompts (id) ON DELETE CASCADE,
    particle_id        TEXT NOT NULL REFERENCES particles (id),
    sort_order         INTEGER NOT NULL CHECK (sort_order >= 0),
    pinned_version_id  TEXT NULL,
    pinned_number      INTEGER NULL,
    valid_from         TIMESTAMP NOT NULL,
    valid_to           TIMESTAMP NULL,
    PRIMARY KEY (association_id, valid_from),
    CHECK ((pinned_version_id IS NULL) = (pinned_number IS NULL)),
    FOREIGN KEY (pinned_version_id, particle_id, pinned_number)
        REFERENCES particle_versions (id, particle_id, number)
);

-- Layouts: WHERE system_prompt_id IN (...) AND <in effect>.
CREATE INDEX system_prompt_particles_system_prompt_id_idx
    ON system_prompt_particles (system_prompt_id);
-- Deleting a particle: is it placed now? WHERE particle_id = ? AND valid_to IS NULL.
CREATE INDEX system_prompt_particles_particle_id_idx
    ON system_prompt_particles (particle_id) WHERE valid_to IS NULL;
