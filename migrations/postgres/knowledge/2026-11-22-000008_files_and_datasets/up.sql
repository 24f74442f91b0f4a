-- Files, their chunks and processing jobs; datasets, their files and snapshots (issue 7,
-- docs/decisions/0012-files-and-datasets.md). A file's content is a blob named by its
-- sha256 (shared by identical uploads). `file_jobs` is the processing queue: a job is due
-- when `run_after` has passed and it has no live lease (`leased_until` in the future);
-- workers claim with FOR UPDATE SKIP LOCKED (PostgreSQL) or inside an IMMEDIATE
-- transaction (SQLite). A file in a dataset or a snapshot cannot be deleted (no cascade).
-- `datasets.version` counts content changes; snapshots freeze (file, sha256) at a version.
CREATE TABLE files (
    id                TEXT PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 64),
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    created_by        TEXT NOT NULL CHECK (char_length(created_by) BETWEEN 1 AND 255),
    name              TEXT NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
    format            TEXT NOT NULL CHECK (format IN ('pdf', 'docx', 'txt', 'csv', 'json', 'md', 'png', 'jpeg', 'gif', 'webp')),
    size              BIGINT NOT NULL CHECK (size > 0),
    sha256            TEXT NOT NULL CHECK (char_length(sha256) = 64),
    status            TEXT NOT NULL CHECK (status IN ('processing', 'ready', 'failed')),
    progress          INTEGER NOT NULL CHECK (progress BETWEEN 0 AND 100),
    error             TEXT NULL,
    chunk_count       INTEGER NOT NULL CHECK (chunk_count >= 0),
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL,
    UNIQUE (id, organization_id)
);

CREATE INDEX files_organization_id_id_idx ON files (organization_id, id);
CREATE INDEX files_organization_id_status_id_idx ON files (organization_id, status, id);
CREATE INDEX files_sha256_idx ON files (sha256);

CREATE TABLE file_chunks (
    file_id           TEXT NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    ordinal           INTEGER NOT NULL CHECK (ordinal >= 0),
    text              TEXT NOT NULL,
    token_count       INTEGER NOT NULL CHECK (token_count >= 0),
    page              INTEGER NULL,
    section           TEXT NULL,
    char_start        BIGINT NOT NULL CHECK (char_start >= 0),
    char_end          BIGINT NOT NULL CHECK (char_end >= char_start),
    PRIMARY KEY (file_id, ordinal)
);

CREATE TABLE file_jobs (
    file_id           TEXT PRIMARY KEY REFERENCES files (id) ON DELETE CASCADE,
    attempts          INTEGER NOT NULL CHECK (attempts >= 0),
    run_after         TIMESTAMP NOT NULL,
    leased_by         TEXT NULL,
    leased_until      TIMESTAMP NULL,
    last_error        TEXT NULL,
    created_at        TIMESTAMP NOT NULL
);

CREATE INDEX file_jobs_run_after_idx ON file_jobs (run_after);

CREATE TABLE datasets (
    id                TEXT PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 64),
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    name              TEXT NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    description       TEXT NULL,
    version           BIGINT NOT NULL CHECK (version >= 1),
    created_by        TEXT NOT NULL CHECK (char_length(created_by) BETWEEN 1 AND 255),
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL
);

CREATE INDEX datasets_organization_id_id_idx ON datasets (organization_id, id);

CREATE TABLE dataset_files (
    dataset_id        TEXT NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    file_id           TEXT NOT NULL REFERENCES files (id),
    added_at          TIMESTAMP NOT NULL,
    PRIMARY KEY (dataset_id, file_id)
);

CREATE INDEX dataset_files_file_id_idx ON dataset_files (file_id);

CREATE TABLE dataset_snapshots (
    dataset_id        TEXT NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    version           BIGINT NOT NULL CHECK (version >= 1),
    created_at        TIMESTAMP NOT NULL,
    PRIMARY KEY (dataset_id, version)
);

CREATE TABLE snapshot_files (
    dataset_id        TEXT NOT NULL,
    version           BIGINT NOT NULL,
    file_id           TEXT NOT NULL REFERENCES files (id),
    sha256            TEXT NOT NULL,
    PRIMARY KEY (dataset_id, version, file_id),
    FOREIGN KEY (dataset_id, version)
        REFERENCES dataset_snapshots (dataset_id, version) ON DELETE CASCADE
);

CREATE INDEX snapshot_files_file_id_idx ON snapshot_files (file_id);
