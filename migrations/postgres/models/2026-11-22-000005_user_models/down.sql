DROP TABLE user_models;
