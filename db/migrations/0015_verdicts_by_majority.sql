-- 0015_verdicts_by_majority: under `judge --repeat K` the verdict in force of an item is the
-- majority of its samples, not whichever request finished last.
--
-- samples_in_force: an item's samples under one judge: the newest judgment of each sample index,
-- in the configuration (judge key) of the judge's newest judgment on the item.
-- verdicts_by_majority: per item and judge, the verdict those samples give:
--   * one sample: that judgment, as before (status, verdict; its own unparsed reason);
--   * the parsed samples' most frequent verdict when no other verdict is as frequent: that
--     verdict (its newest sample is the judgment in force); a sample that did not parse or
--     failed is no vote;
--   * a tie between the most frequent verdicts: unparsed, reason "the K repeats tie …";
--   * scores (JSON objects, the rubric): the mean of each score over the parsed samples (no two
--     sets of scores need be equal), the newest parsed sample the judgment in force;
--   * no sample parsed: unparsed (error when every sample failed), with the reason.
-- verdicts_in_force gains the reason (NULL: the judgment's own reason, if any). Pairs without
-- repeats keep the one-row insert of 0008 (the partial index judgments_repeats tells them
-- apart); pairs with repeats are recomputed from verdicts_by_majority by every write. Applied
-- once, never edited.

ALTER TABLE verdicts_in_force ADD COLUMN reason TEXT;

CREATE VIEW samples_in_force AS
SELECT s.* FROM judgments s
WHERE s.id = (SELECT max(k.id) FROM judgments k
              WHERE k.judge_key = s.judge_key AND k.item_id = s.item_id AND k.sample = s.sample)
  AND s.judge_key = (SELECT k.judge_key FROM judgments k
                     WHERE k.item_id = s.item_id AND k.judge_name = s.judge_name ORDER BY k.id DESC LIMIT 1);

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
    WHERE n.id = (SELECT max(k.id) FROM judgments k WHERE k.item_id = n.item_id AND k.judge_name = n.judge_name)
);

-- the triggers of 0008 for judgments -> verdicts_in_force, split: pairs without repeats as
-- before, pairs with repeats by majority

DROP TRIGGER judgment_added;
DROP TRIGGER judgment_reparsed;
DROP TRIGGER judgment_removed;

CREATE TRIGGER judgment_added AFTER INSERT ON judgments
WHEN NOT EXISTS (SELECT 1 FROM judgments r INDEXED BY judgments_repeats
                 WHERE r.item_id = new.item_id AND r.judge_name = new.judge_name AND r.sample > 0)
BEGIN
    DELETE FROM verdicts_in_force
    WHERE item_id = new.item_id AND judge_name = new.judge_name AND judgment_id < new.id;
    INSERT OR IGNORE INTO verdicts_in_force (item_id, judge_name, judgment_id, status, verdict)
    VALUES (new.item_id, new.judge_name, new.id, new.status, new.verdict);
END;

CREATE TRIGGER judgment_added_to_repeats AFTER INSERT ON judgments
WHEN EXISTS (SELECT 1 FROM judgments r INDEXED BY judgments_repeats
             WHERE r.item_id = new.item_id AND r.judge_name = new.judge_name AND r.sample > 0)
BEGIN
    DELETE FROM verdicts_in_force WHERE item_id = new.item_id AND judge_name = new.judge_name;
    INSERT INTO verdicts_in_force (item_id, judge_name, judgment_id, status, verdict, reason)
    SELECT item_id, judge_name, judgment_id, status, verdict, reason FROM verdicts_by_majority
    WHERE item_id = new.item_id AND judge_name = new.judge_name;
END;

CREATE TRIGGER judgment_reparsed AFTER UPDATE OF status, verdict ON judgments
WHEN (old.status IS NOT new.status OR old.verdict IS NOT new.verdict)
 AND NOT EXISTS (SELECT 1 FROM judgments r INDEXED BY judgments_repeats
                 WHERE r.item_id = new.item_id AND r.judge_name = new.judge_name AND r.sample > 0)
BEGIN
    DELETE FROM verdicts_in_force
    WHERE item_id = new.item_id AND judge_name = new.judge_name AND judgment_id = new.id;
    INSERT OR IGNORE INTO verdicts_in_force (item_id, judge_name, judgment_id, status, verdict)
    SELECT new.item_id, new.judge_name, new.id, new.status, new.verdict
    WHERE NOT EXISTS (SELECT 1 FROM judgments WHERE item_id = new.item_id AND judge_name = new.judge_name AND id > new.id);
END;

CREATE TRIGGER judgment_reparsed_in_repeats AFTER UPDATE OF status, verdict ON judgments
WHEN (old.status IS NOT new.status OR old.verdict IS NOT new.verdict)
 AND EXISTS (SELECT 1 FROM judgments r INDEXED BY judgments_repeats
             WHERE r.item_id = new.item_id AND r.judge_name = new.judge_name AND r.sample > 0)
BEGIN
    DELETE FROM verdicts_in_force WHERE item_id = new.item_id AND judge_name = new.judge_name;
    INSERT INTO verdicts_in_force (item_id, judge_name, judgment_id, status, verdict, reason)
    SELECT item_id, judge_name, judgment_id, status, verdict, reason FROM verdicts_by_majority
    WHERE item_id = new.item_id AND judge_name = new.judge_name;
END;

CREATE TRIGGER judgment_removed AFTER DELETE ON judgments
WHEN NOT EXISTS (SELECT 1 FROM judgments r INDEXED BY judgments_repeats
                 WHERE r.item_id = old.item_id AND r.judge_name = old.judge_name AND r.sample > 0)
BEGIN
    DELETE FROM verdicts_in_force
    WHERE item_id = old.item_id AND judge_name = old.judge_name AND judgment_id = old.id;
    INSERT INTO verdicts_in_force (item_id, judge_name, judgment_id, status, verdict)
    SELECT item_id, judge_name, id, status, verdict FROM judgments
    WHERE item_id = old.item_id AND judge_name = old.judge_name ORDER BY id DESC LIMIT 1
    ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER judgment_removed_from_repeats AFTER DELETE ON judgments
WHEN EXISTS (SELECT 1 FROM judgments r INDEXED BY judgments_repeats
             WHERE r.item_id = old.item_id AND r.judge_name = old.judge_name AND r.sample > 0)
BEGIN
    DELETE FROM verdicts_in_force WHERE item_id = old.item_id AND judge_name = old.judge_name;
    INSERT INTO verdicts_in_force (item_id, judge_name, judgment_id, status, verdict, reason)
    SELECT item_id, judge_name, judgment_id, status, verdict, reason FROM verdicts_by_majority
    WHERE item_id = old.item_id AND judge_name = old.judge_name;
END;

-- the pairs that have repeats, by majority now
DELETE FROM verdicts_in_force
WHERE (item_id, judge_name) IN (SELECT item_id, judge_name FROM judgments INDEXED BY judgments_repeats WHERE sample > 0);
INSERT INTO verdicts_in_force (item_id, judge_name, judgment_id, status, verdict, reason)
SELECT m.item_id, m.judge_name, m.judgment_id, m.status, m.verdict, m.reason FROM verdicts_by_majority m
WHERE (m.item_id, m.judge_name) IN (SELECT item_id, judge_name FROM judgments INDEXED BY judgments_repeats WHERE sample > 0);
