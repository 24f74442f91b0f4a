-- What an OpenAI client uploaded a file for (`purpose` on `/openai/v1/files`: `assistants`
-- or `user_data`); files uploaded through `/v1` have none (issue 64).
ALTER TABLE files ADD COLUMN purpose TEXT;
-- A dataset's key-value metadata as OpenAI's vector stores carry it (a JSON object of at
-- most 16 strings; NULL when it has none).
ALTER TABLE datasets ADD COLUMN metadata TEXT;
-- What a client attached to a file in a dataset (OpenAI's vector store file `attributes`: a
-- JSON object of at most 16 strings, numbers or booleans; NULL when it has none).
ALTER TABLE dataset_files ADD COLUMN attributes TEXT;
