DROP TABLE dataset_file_batches;
