CREATE INDEX chats_generating_idx ON chats (id) WHERE status = 'generating';
DROP TABLE running_generations;
DROP TABLE generation_runners;
