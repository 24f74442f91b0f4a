-- Generations of the vector index (issue 62): each is one complete index made by one
-- embedding model. A new one is built beside the one in use when the model changes, and
-- put in use once every ready file's vectors are in it. None recorded: the index of before
-- (generation 0) is in use. One process re-embeds, under the lease.
CREATE TABLE index_generations (
    generation        INTEGER PRIMARY KEY,
    embedding_model   TEXT NOT NULL,
    state             TEXT NOT NULL CHECK (state IN ('building', 'active', 'retired')),
    leased_by         TEXT NULL,
    leased_until      TIMESTAMP NULL,
    created_at        TIMESTAMP NOT NULL,
    activated_at      TIMESTAMP NULL
);

-- The generation a ready file's vectors reached (0: the index of before generations).
ALTER TABLE files ADD COLUMN index_generation INTEGER NOT NULL DEFAULT 0;
CREATE INDEX files_index_generation ON files (index_generation) WHERE status = 'ready';
