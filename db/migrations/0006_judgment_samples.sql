-- 0006_judgment_samples: a judge may be asked about one item K times (`calibrate judge --repeat K`)
-- under one judge key; each answer is a judgment with its sample index 0..K-1. Judgments stored
-- before this migration, and every run without --repeat, are sample 0.

ALTER TABLE judgments ADD COLUMN sample INTEGER NOT NULL DEFAULT 0;

CREATE INDEX judgments_by_key_sample ON judgments (judge_key, item_id, sample);
