DROP TABLE usage_hourly;
