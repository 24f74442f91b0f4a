-- The part of an answer's `input_tokens` the provider read from a cache (issue 63); 0 for
-- messages without usage and for answers stored before it was counted.
ALTER TABLE chat_messages ADD COLUMN cached_input_tokens BIGINT NOT NULL DEFAULT 0;
