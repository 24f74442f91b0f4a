ALTER TABLE files DROP COLUMN embedding_model;
