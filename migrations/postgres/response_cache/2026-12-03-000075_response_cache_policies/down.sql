DROP TABLE response_cache_policies;
