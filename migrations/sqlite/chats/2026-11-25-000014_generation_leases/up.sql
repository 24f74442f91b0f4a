-- Which process runs each generation (see the PostgreSQL migration of the same name).
CREATE TABLE generation_runners (
    id          TEXT PRIMARY KEY NOT NULL CHECK (length(id) BETWEEN 1 AND 64),
    started_at  TIMESTAMP NOT NULL,
    seen_at     TIMESTAMP NOT NULL
);

CREATE TABLE running_generations (
    runner_id        TEXT NOT NULL,
    chat_id          TEXT NOT NULL,
    organization_id  TEXT NOT NULL,
    started_at       TIMESTAMP NOT NULL,
    PRIMARY KEY (runner_id, chat_id)
);

INSERT INTO running_generations (runner_id, chat_id, organization_id, started_at)
SELECT 'before-leases', id, organization_id, updated_at FROM chats WHERE status = 'generating';

DROP INDEX chats_generating_idx;
