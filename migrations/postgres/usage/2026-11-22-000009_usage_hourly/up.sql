-- Hourly sums of usage per organization and model (docs/benchmarks.md, usage reports):
-- kept in the transaction that writes each usage record, so reports without a user or chat
-- in them, over whole UTC hours, in whole-hour time zones, read a row per hour and model
-- instead of every record. Backfilled from the records written before it existed.
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
SELECT organization_id, date_trunc('hour', created_at), model_id, SUM(input_tokens),
       SUM(output_tokens), SUM(reasoning_tokens), SUM(credits), COUNT(*)
FROM usage_records
GROUP BY 1, 2, 3;
