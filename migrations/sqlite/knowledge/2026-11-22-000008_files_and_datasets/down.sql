DROP TABLE snapshot_files;
DROP TABLE dataset_snapshots;
DROP TABLE dataset_files;
DROP TABLE datasets;
DROP TABLE file_jobs;
DROP TABLE file_chunks;
DROP TABLE files;
