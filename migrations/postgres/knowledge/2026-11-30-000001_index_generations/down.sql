DROP INDEX files_index_generation;
ALTER TABLE files DROP COLUMN index_generation;
DROP TABLE index_generations;
