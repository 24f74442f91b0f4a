CREATE TABLE usage_hourly_folded (
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
INSERT INTO usage_hourly_folded
SELECT organization_id, hour, model_id, SUM(input_tokens), SUM(output_tokens),
       SUM(reasoning_tokens), SUM(credits), SUM(requests)
FROM usage_hourly
GROUP BY organization_id, hour, model_id;
DROP TABLE usage_hourly;
ALTER TABLE usage_hourly_folded RENAME TO usage_hourly;
