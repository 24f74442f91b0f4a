ALTER TABLE datasets DROP COLUMN late_interaction;
