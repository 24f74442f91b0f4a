DROP TABLE usage_records;
