DROP TABLE guardrail_policies;
