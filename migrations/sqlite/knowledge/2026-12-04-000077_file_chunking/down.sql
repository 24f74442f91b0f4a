ALTER TABLE files DROP COLUMN chunk_overlap_tokens;
ALTER TABLE files DROP COLUMN chunk_max_tokens;
