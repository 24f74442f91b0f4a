ALTER TABLE dataset_files DROP COLUMN attributes;
ALTER TABLE datasets DROP COLUMN metadata;
ALTER TABLE files DROP COLUMN purpose;
