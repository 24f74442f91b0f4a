DROP TABLE batch_results;
DROP TABLE batches;
