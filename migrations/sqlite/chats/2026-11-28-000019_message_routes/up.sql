-- How a routed answer was obtained: a JSON object {deployment, failedAttempts}.
ALTER TABLE chat_messages ADD COLUMN route TEXT;
