DROP TABLE model_mcp_servers;
DROP TABLE mcp_servers;
