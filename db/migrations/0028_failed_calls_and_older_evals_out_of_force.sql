-- 0028_failed_calls_and_older_evals_out_of_force: which of a judge's judgments of an item is in
-- force. Until now it was the newest stored (highest id), so a failed call displaced a verdict
-- (an imported one, or another configuration's, or the same one's) and the item counted as an
-- error, and an Inspect log of an older eval imported after a newer one took over. Now the
-- judgment in force is the first in the order
--
--     status != 'error' DESC, judged_at DESC, id DESC
--
-- that is: a verdict (or unparsed output) always before a failed call, so a failed call never
-- displaces a verdict, only an earlier failed call; then the time the judgment was made; then
-- the order stored. Under `judge --repeat` the configuration whose samples are in force is that
-- of the first judgment in this order, and each sample's judgment in force is the first of its
-- sample in it (the majority is taken as before, migration 0015).
--
-- judgments.judged_at: when the judgment was made, as UTC ISO text (text order is time order):
-- the eval's own creation time for an Inspect log's score, the time it was stored for every
-- other (a judge's answer, an imported output); merged judgments keep theirs, so merging orders
-- them as judging in one database would. '' for judgments stored before this migration: they
-- keep the order they had (among themselves by id, before any judgment stored since).
--
-- The triggers of migration 0021 (and 0016) without repeats are replaced; those with repeats
-- read verdicts_by_majority, whose views are replaced. Judgments stored before keep judged_at '',
-- so the new order differs from the old only where a failed call is in force over a verdict of
-- the same judge: those pairs (found along the errors, few where any) are recomputed, and only
-- the rows that change are rewritten, so the counts the triggers on verdicts_in_force keep
-- follow. Applied once, never edited.

ALTER TABLE judgments ADD COLUMN judged_at TEXT NOT NULL DEFAULT '';

DROP VIEW verdicts_by_majority;
DROP VIEW samples_in_force;

CREATE VIEW samples_in_force AS
SELECT s.* FROM judgments s
WHERE s.id = (SELECT k.id FROM judgments k
              WHERE k.judge_key = s.judge_key AND k.item_id = s.item_id AND k.sample = s.sample
              ORDER BY k.status != 'error' DESC, k.judged_at DESC, k.id DESC LIMIT 1)
  AND s.judge_key = (SELECT k.judge_key FROM judgments k
                     WHERE k.item_id = s.item_id AND k.judge_name = s.judge_name
                     ORDER BY k.status != 'error' DESC, k.judged_at DESC, k.id DESC LIMIT 1);

CREATE VIEW verdicts_by_majority AS
SELECT item_id, judge_name,
       CASE WHEN samples > 1 AND mean IS NOT NULL THEN top_id
            WHEN top_n > second_n THEN top_id ELSE newest END AS judgment_id,
       CASE WHEN samples > 1 AND mean IS NOT NULL THEN 'verdict'
            WHEN top_n > second_n THEN 'verdict'
            WHEN samples = 1 THEN newest_status
            WHEN top_n > 0 THEN 'unparsed'
            WHEN errors = samples THEN 'error'
            ELSE 'unparsed' END AS status,
       CASE WHEN samples > 1 AND mean IS NOT NULL THEN mean
            WHEN top_n > second_n THEN top_verdict END AS verdict,
       CASE WHEN samples = 1 OR top_n > second_n OR mean IS NOT NULL THEN NULL
            WHEN top_n > 0 THEN printf('the %d repeats tie: %d each for the most frequent verdicts', samples, top_n)
            WHEN errors = samples THEN printf('all %d repeats failed', samples)
            ELSE printf('none of the %d repeats gave a verdict', samples) END AS reason
FROM (
    SELECT n.item_id, n.judge_name, n.id AS newest, n.status AS newest_status,
           (SELECT count(*) FROM samples_in_force s
            WHERE s.item_id = n.item_id AND s.judge_name = n.judge_name) AS samples,
           (SELECT count(*) FROM samples_in_force s
            WHERE s.item_id = n.item_id AND s.judge_name = n.judge_name AND s.status = 'error') AS errors,
           (SELECT s.verdict FROM samples_in_force s
            WHERE s.item_id = n.item_id AND s.judge_name = n.judge_name AND s.status = 'verdict'
            GROUP BY s.verdict ORDER BY count(*) DESC, max(s.id) DESC LIMIT 1) AS top_verdict,
           coalesce((SELECT count(*) FROM samples_in_force s
            WHERE s.item_id = n.item_id AND s.judge_name = n.judge_name AND s.status = 'verdict'
            GROUP BY s.verdict ORDER BY count(*) DESC, max(s.id) DESC LIMIT 1), 0) AS top_n,
           (SELECT max(s.id) FROM samples_in_force s
            WHERE s.item_id = n.item_id AND s.judge_name = n.judge_name AND s.status = 'verdict'
            GROUP BY s.verdict ORDER BY count(*) DESC, max(s.id) DESC LIMIT 1) AS top_id,
           coalesce((SELECT count(*) FROM samples_in_force s
            WHERE s.item_id = n.item_id AND s.judge_name = n.judge_name AND s.status = 'verdict'
            GROUP BY s.verdict ORDER BY count(*) DESC, max(s.id) DESC LIMIT 1 OFFSET 1), 0) AS second_n,
           (SELECT CASE WHEN count(*) > 0 THEN json_group_object(key, mean) END FROM (
                SELECT e.key AS key, avg(e.value) AS mean
                FROM samples_in_force s,
                     json_each(CASE WHEN json_valid(s.verdict) AND json_type(s.verdict) = 'object' THEN s.verdict
                               ELSE '{}' END) e
                WHERE s.item_id = n.item_id AND s.judge_name = n.judge_name AND s.status = 'verdict'
                GROUP BY e.key)) AS mean
    FROM judgments n
    WHERE n.id = (SELECT k.id FROM judgments k WHERE k.item_id = n.item_id AND k.judge_name = n.judge_name
                  ORDER BY k.status != 'error' DESC, k.judged_at DESC, k.id DESC LIMIT 1)
);

DROP TRIGGER judgment_added;
DROP TRIGGER judgment_removed;
DROP TRIGGER judgment_reparsed;

-- a new judgment takes the place of the one in force where it comes first in the order
CREATE TRIGGER judgment_added AFTER INSERT ON judgments
WHEN NOT EXISTS (SELECT 1 FROM judgments r INDEXED BY judgments_repeats
                 WHERE r.item_id = new.item_id AND r.judge_name = new.judge_name AND r.sample > 0)
BEGIN
    DELETE FROM verdicts_in_force
    WHERE item_id = new.item_id AND judge_name = new.judge_name
      AND (SELECT (new.status != 'error', new.judged_at, new.id) > (j.status != 'error', j.judged_at, j.id)
           FROM judgments j WHERE j.id = verdicts_in_force.judgment_id);
    INSERT OR IGNORE INTO verdicts_in_force (item_id, judge_name, judgment_id, status, verdict)
    VALUES (new.item_id, new.judge_name, new.id, new.status, new.verdict);
END;

-- the row in force is kept where it is still the first judgment in the order, unchanged
-- (it may be a majority's, with a reason, after the last repeat went: then it is rewritten)
CREATE TRIGGER judgment_removed AFTER DELETE ON judgments
WHEN NOT EXISTS (SELECT 1 FROM judgments r INDEXED BY judgments_repeats
                 WHERE r.item_id = old.item_id AND r.judge_name = old.judge_name AND r.sample > 0)
BEGIN
    DELETE FROM verdicts_in_force
    WHERE item_id = old.item_id AND judge_name = old.judge_name
      AND NOT EXISTS (SELECT 1 FROM judgments j
                      WHERE j.id = verdicts_in_force.judgment_id
                        AND j.id = (SELECT k.id FROM judgments k
                                    WHERE k.item_id = old.item_id AND k.judge_name = old.judge_name
                                    ORDER BY k.status != 'error' DESC, k.judged_at DESC, k.id DESC LIMIT 1)
                        AND j.status IS verdicts_in_force.status AND j.verdict IS verdicts_in_force.verdict
                        AND verdicts_in_force.reason IS NULL);
    INSERT INTO verdicts_in_force (item_id, judge_name, judgment_id, status, verdict)
    SELECT item_id, judge_name, id, status, verdict FROM judgments
    WHERE item_id = old.item_id AND judge_name = old.judge_name
    ORDER BY status != 'error' DESC, judged_at DESC, id DESC LIMIT 1
    ON CONFLICT DO NOTHING;
END;

-- a re-parse can move a judgment across the line between verdicts and failed calls
CREATE TRIGGER judgment_reparsed AFTER UPDATE OF status, verdict ON judgments
WHEN (old.status IS NOT new.status OR old.verdict IS NOT new.verdict)
 AND NOT EXISTS (SELECT 1 FROM judgments r INDEXED BY judgments_repeats
                 WHERE r.item_id = new.item_id AND r.judge_name = new.judge_name AND r.sample > 0)
BEGIN
    DELETE FROM verdicts_in_force
    WHERE item_id = new.item_id AND judge_name = new.judge_name
      AND (judgment_id = new.id
           OR judgment_id != (SELECT k.id FROM judgments k
                              WHERE k.item_id = new.item_id AND k.judge_name = new.judge_name
                              ORDER BY k.status != 'error' DESC, k.judged_at DESC, k.id DESC LIMIT 1));
    INSERT OR IGNORE INTO verdicts_in_force (item_id, judge_name, judgment_id, status, verdict)
    SELECT item_id, judge_name, id, status, verdict FROM judgments
    WHERE item_id = new.item_id AND judge_name = new.judge_name
    ORDER BY status != 'error' DESC, judged_at DESC, id DESC LIMIT 1;
END;

-- the pairs where the new order differs: a failed call and a verdict of the same judge and item
CREATE TEMP TABLE in_force_recomputed AS
SELECT p.item_id, p.judge_name, b.id AS judgment_id, b.status, b.verdict, NULL AS reason
FROM (SELECT DISTINCT e.item_id, e.judge_name FROM judgments e
      WHERE e.status = 'error'
        AND EXISTS (SELECT 1 FROM judgments k WHERE k.item_id = e.item_id AND k.judge_name = e.judge_name
                                               AND k.status != 'error')) p
JOIN judgments b ON b.id = (SELECT k.id FROM judgments k WHERE k.item_id = p.item_id AND k.judge_name = p.judge_name
                            ORDER BY k.status != 'error' DESC, k.judged_at DESC, k.id DESC LIMIT 1)
WHERE NOT EXISTS (SELECT 1 FROM judgments r INDEXED BY judgments_repeats
                  WHERE r.item_id = p.item_id AND r.judge_name = p.judge_name AND r.sample > 0);

INSERT INTO in_force_recomputed
SELECT m.item_id, m.judge_name, m.judgment_id, m.status, m.verdict, m.reason
FROM (SELECT DISTINCT e.item_id, e.judge_name FROM judgments e
      WHERE e.status = 'error'
        AND EXISTS (SELECT 1 FROM judgments r INDEXED BY judgments_repeats
                    WHERE r.item_id = e.item_id AND r.judge_name = e.judge_name AND r.sample > 0)) p
JOIN verdicts_by_majority m ON m.item_id = p.item_id AND m.judge_name = p.judge_name;

DELETE FROM verdicts_in_force
WHERE (item_id, judge_name) IN (
    SELECT n.item_id, n.judge_name FROM in_force_recomputed n
    JOIN verdicts_in_force v ON v.item_id = n.item_id AND v.judge_name = n.judge_name
    WHERE n.judgment_id IS NOT v.judgment_id OR n.status IS NOT v.status
       OR n.verdict IS NOT v.verdict OR n.reason IS NOT v.reason);

INSERT INTO verdicts_in_force (item_id, judge_name, judgment_id, status, verdict, reason)
SELECT item_id, judge_name, judgment_id, status, verdict, reason FROM in_force_recomputed
WHERE true
ON CONFLICT DO NOTHING;

DROP TABLE in_force_recomputed;
