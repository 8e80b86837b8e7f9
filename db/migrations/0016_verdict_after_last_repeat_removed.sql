-- 0016_verdict_after_last_repeat_removed: when the last repeat (sample > 0) of an item under a
-- judge is removed, the pair's verdict in force is its newest judgment again, not the majority
-- row the repeats left behind (0015's judgment_removed kept any row whose judgment survived,
-- e.g. a tie's "unparsed" or a mean of scores). Without repeats the row in force is always
-- the newest judgment's own status and verdict with no reason of its own; the trigger replaces
-- any other row. Applied once, never edited.

DROP TRIGGER judgment_removed;

CREATE TRIGGER judgment_removed AFTER DELETE ON judgments
WHEN NOT EXISTS (SELECT 1 FROM judgments r INDEXED BY judgments_repeats
                 WHERE r.item_id = old.item_id AND r.judge_name = old.judge_name AND r.sample > 0)
BEGIN
    DELETE FROM verdicts_in_force
    WHERE item_id = old.item_id AND judge_name = old.judge_name
      AND NOT EXISTS (SELECT 1 FROM judgments j
                      WHERE j.id = verdicts_in_force.judgment_id
                        AND j.id = (SELECT max(k.id) FROM judgments k
                                    WHERE k.item_id = old.item_id AND k.judge_name = old.judge_name)
                        AND j.status IS verdicts_in_force.status AND j.verdict IS verdicts_in_force.verdict
                        AND verdicts_in_force.reason IS NULL);
    INSERT INTO verdicts_in_force (item_id, judge_name, judgment_id, status, verdict)
    SELECT item_id, judge_name, id, status, verdict FROM judgments
    WHERE item_id = old.item_id AND judge_name = old.judge_name ORDER BY id DESC LIMIT 1
    ON CONFLICT DO NOTHING;
END;
