-- What a completion's guardrails did: a JSON array of {rule, kind, direction, effect, count,
-- hookFailure?}; never a checked value. NULL when no policy applied.
ALTER TABLE chat_messages ADD COLUMN guardrails TEXT;
