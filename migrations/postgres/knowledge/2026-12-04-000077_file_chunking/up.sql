-- The chunk sizes a client asked a file to be cut with (a vector store's `static` chunking
-- strategy, in the embedding model's tokens); NULL: the server's setting (decision 0064).
-- Both are set, or neither.
ALTER TABLE files ADD COLUMN chunk_max_tokens INTEGER;
ALTER TABLE files ADD COLUMN chunk_overlap_tokens INTEGER;
