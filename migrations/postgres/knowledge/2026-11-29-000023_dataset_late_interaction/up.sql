-- Whether a dataset's searches reorder their candidates by late interaction (MaxSim over
-- the chunks' token vectors) unless a request says otherwise (issue 62).
ALTER TABLE datasets ADD COLUMN late_interaction BOOLEAN NOT NULL DEFAULT FALSE;
