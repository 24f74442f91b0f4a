DROP TABLE artifacts;
DROP TABLE usage_records;
