-- Files a user message attached: a JSON array of {fileId, fileName, kind, mediaType}.
ALTER TABLE chat_messages ADD COLUMN attachments TEXT NOT NULL DEFAULT '[]';
