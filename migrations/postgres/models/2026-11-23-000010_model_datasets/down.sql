DROP TABLE model_datasets;
