-- Hourly usage rollup. Keep in step with migrations/postgres (same table, same columns);
-- the comments there describe it.
CREATE TABLE usage_hourly (
    organization_id   TEXT NOT NULL REFERENCES organizations (id),
    hour              TIMESTAMP NOT NULL,
    model_id          TEXT NOT NULL,
    input_tokens      BIGINT NOT NULL,
    output_tokens     BIGINT NOT NULL,
    reasoning_tokens  BIGINT NOT NULL,
    credits           BIGINT NOT NULL,
    requests          BIGINT NOT NULL,
    PRIMARY KEY (organization_id, hour, model_id)
);

INSERT INTO usage_hourly
SELECT organization_id, strftime('%Y-%m-%d %H:00:00', created_at), model_id, SUM(input_tokens),
       SUM(output_tokens), SUM(reasoning_tokens), SUM(credits), COUNT(*)
FROM usage_records
GROUP BY 1, 2, 3;
