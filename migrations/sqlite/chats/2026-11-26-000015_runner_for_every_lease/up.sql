-- Every lease's runner has a row (see the PostgreSQL migration of the same name).
INSERT INTO generation_runners (id, started_at, seen_at)
SELECT runner_id, '1970-01-01 00:00:00', '1970-01-01 00:00:00'
FROM running_generations
WHERE NOT EXISTS (SELECT 1 FROM generation_runners WHERE generation_runners.id = running_generations.runner_id)
GROUP BY runner_id;
