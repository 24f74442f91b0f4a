DROP TABLE credential_limits;
