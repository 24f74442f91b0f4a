-- Every lease's runner has a row in `generation_runners`, so the lease sweep starts from the
-- lapsed runners (a handful of rows) and reads only their leases, not the whole churned
-- `running_generations` (docs/decisions/0022-lease-sweep-from-runners.md). The leases left
-- by the previous migration (runner `before-leases`) and any other runner without a row get
-- one that lapsed long ago: the first sweep fails their chats, as before.
INSERT INTO generation_runners (id, started_at, seen_at)
SELECT runner_id, TIMESTAMP '1970-01-01 00:00:00', TIMESTAMP '1970-01-01 00:00:00'
FROM running_generations
WHERE NOT EXISTS (SELECT 1 FROM generation_runners WHERE generation_runners.id = running_generations.runner_id)
GROUP BY runner_id;
