-- 0014_irregular_verdicts: two small partial indexes that find, without reading every judgment,
-- the (item, judge) pairs whose verdict is not simply the judgment in force: the repeats of
-- `judge --repeat` (sample > 0) and the verdicts in force that are errors. Everything else is
-- read straight from verdicts_in_force (trust thresholds, the escalate order, trust marks).
-- Applied once, never edited.

CREATE INDEX judgments_repeats ON judgments (item_id, judge_name) WHERE sample > 0;
CREATE INDEX verdicts_in_force_errors ON verdicts_in_force (item_id, judge_name) WHERE status = 'error';
