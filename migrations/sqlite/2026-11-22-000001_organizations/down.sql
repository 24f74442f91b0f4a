DROP TABLE organizations;
