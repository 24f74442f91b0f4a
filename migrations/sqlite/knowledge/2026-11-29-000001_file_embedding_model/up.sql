-- The embedding model a ready file's vectors were made by (NULL: processed before models
-- were recorded, or no vectors); start-up refuses an index of another model (issue 62).
ALTER TABLE files ADD COLUMN embedding_model TEXT;
