-- Which process runs each generation, so that with several replicas on one database a
-- process that stops mid-answer has its chats failed, and only its own
-- (docs/decisions/0010-chats-generation-and-streams.md, "Generation leases").
--
-- `generation_runners`: one row per running process (a random id taken at start-up) and when
-- it last renewed its lease. A runner whose lease has lapsed is taken for stopped.
CREATE TABLE generation_runners (
    id          TEXT PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 64),
    started_at  TIMESTAMP NOT NULL,
    seen_at     TIMESTAMP NOT NULL
);

-- The generations running now, by runner: written with the chat's `generating` status and
-- deleted with its end, in the same transactions. Kept small (only what runs), so nothing
-- but the primary key indexes it, and no foreign key costs a check per completion.
CREATE TABLE running_generations (
    runner_id        TEXT NOT NULL,
    chat_id          TEXT NOT NULL,
    organization_id  TEXT NOT NULL,
    started_at       TIMESTAMP NOT NULL,
    PRIMARY KEY (runner_id, chat_id)
);

-- Chats left generating before this migration belong to no live runner: the first sweep
-- fails them, as start-up recovery did.
INSERT INTO running_generations (runner_id, chat_id, organization_id, started_at)
SELECT 'before-leases', id, organization_id, updated_at FROM chats WHERE status = 'generating';

-- Recovery reads `running_generations` now. Without an index that names `status`, a
-- generation's end (status, error, updated_at) is a heap-only (HOT) update that adds no
-- index entry, given free room on the chat's page: hence the fill factor.
DROP INDEX chats_generating_idx;
ALTER TABLE chats SET (fillfactor = 80);
