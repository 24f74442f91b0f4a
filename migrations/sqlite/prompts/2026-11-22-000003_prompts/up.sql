-- Particles, their versions, system prompts and the history of their placements.
-- Keep in step with migrations/postgres (same tables, same columns); the comments there
-- describe the columns. A NULL `organization_id` marks a system-owned record.
CREATE TABLE particles (
    id               TEXT PRIMARY KEY NOT NULL CHECK (length(id) BETWEEN 1 AND 64),
    organization_id  TEXT NULL REFERENCES organizations (id),
    slug             TEXT NULL CHECK (length(slug) BETWEEN 1 AND 255),
    name             TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    category         TEXT NOT NULL
                     CHECK (category IN ('role', 'tone', 'guardrails', 'constraints', 'format')),
    description      TEXT NOT NULL CHECK (length(description) <= 1000),
    latest_version   INTEGER NOT NULL CHECK (latest_version >= 1),
    created_at       TIMESTAMP NOT NULL,
    updated_at       TIMESTAMP NOT NULL,
    deleted_at       TIMESTAMP NULL
);

-- System particles are found by slug (seeding); two particles never share one.
CREATE UNIQUE INDEX particles_slug_idx ON particles (slug);
-- Owner-scoped keyset listing: WHERE organization_id = ? (or IS NULL) AND id > ? ORDER BY id.
CREATE INDEX particles_organization_id_id_idx ON particles (organization_id, id);

-- Immutable, numbered versions of a particle's content (numbered from 1, no gaps).
CREATE TABLE particle_versions (
    id           TEXT PRIMARY KEY NOT NULL CHECK (length(id) BETWEEN 1 AND 64),
    particle_id  TEXT NOT NULL REFERENCES particles (id),
    number       INTEGER NOT NULL CHECK (number >= 1),
    content      TEXT NOT NULL CHECK (length(content) BETWEEN 1 AND 32768),
    token_count  INTEGER NOT NULL CHECK (token_count >= 0),
    created_at   TIMESTAMP NOT NULL,
    UNIQUE (particle_id, number),
    -- Target of the placements' pin reference (a pin names a version of its own particle).
    UNIQUE (id, particle_id, number)
);

-- System prompts, owned like particles (NULL `organization_id`: a system profile).
CREATE TABLE system_prompts (
    id               TEXT PRIMARY KEY NOT NULL CHECK (length(id) BETWEEN 1 AND 64),
    organization_id  TEXT NULL REFERENCES organizations (id),
    slug             TEXT NULL CHECK (length(slug) BETWEEN 1 AND 255),
    name             TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    description      TEXT NOT NULL CHECK (length(description) <= 1000),
    enabled          BOOLEAN NOT NULL CHECK (enabled IN (0, 1)),
    created_at       TIMESTAMP NOT NULL,
    updated_at       TIMESTAMP NOT NULL
);

CREATE UNIQUE INDEX system_prompts_slug_idx ON system_prompts (slug);
-- Owner-scoped keyset listing, as for particles.
CREATE INDEX system_prompts_organization_id_id_idx ON system_prompts (organization_id, id);

-- Placement history: one row per placement (`association_id`) and period in which it had
-- one order and pin, from `valid_from` until `valid_to` (exclusive; NULL while current).
CREATE TABLE system_prompt_particles (
    association_id     TEXT NOT NULL CHECK (length(association_id) BETWEEN 1 AND 64),
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
