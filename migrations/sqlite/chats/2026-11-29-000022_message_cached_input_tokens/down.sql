ALTER TABLE chat_messages DROP COLUMN cached_input_tokens;
