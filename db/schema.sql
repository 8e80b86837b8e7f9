CREATE VIEW cell_verdict_rows AS
SELECT (SELECT min(count(*), 2) FROM labels_in_force l WHERE l.item_id = v.item_id) AS labelled,
       i.task, i.lang, v.judge_name,
       EXISTS (SELECT 1 FROM judgments r WHERE r.item_id = v.item_id AND r.judge_name = v.judge_name
               AND r.sample > 0) AS repeated,
       i.system, v.status, coalesce(v.verdict, '') AS verdict,
       (SELECT CASE WHEN count(*) = 1 THEN max(l.label) ELSE '' END FROM labels_in_force l
        WHERE l.item_id = v.item_id) AS label,
       coalesce(i.response_length, -1) AS response_length, v.item_id, j.confidence
FROM verdicts_in_force v
JOIN items i ON i.id = v.item_id
JOIN judgments j ON j.id = v.judgment_id
WHERE i.current = 1 AND NOT EXISTS (SELECT 1 FROM import_runs r WHERE r.id = i.import_run AND r.finished_at IS NULL);
CREATE VIEW counted_items AS
SELECT i.id, i.task, i.lang, i.system FROM items i
WHERE i.current = 1 AND NOT EXISTS (SELECT 1 FROM import_runs r WHERE r.id = i.import_run AND r.finished_at IS NULL);
CREATE VIEW current_labels AS
SELECT item_id, annotator, label, action, judgment_id, decided_at AS created_at
FROM labels_in_force;
CREATE VIEW samples_in_force AS
SELECT s.* FROM judgments s
WHERE s.id = (SELECT k.id FROM judgments k
              WHERE k.judge_key = s.judge_key AND k.item_id = s.item_id AND k.sample = s.sample
              ORDER BY k.status != 'error' DESC, k.judged_at DESC, k.id DESC LIMIT 1)
  AND s.judge_key = (SELECT k.judge_key FROM judgments k
                     WHERE k.item_id = s.item_id AND k.judge_name = s.judge_name
                     ORDER BY k.status != 'error' DESC, k.judged_at DESC, k.id DESC LIMIT 1);
CREATE VIEW score_set_golds AS
SELECT i.id AS item_id,
       CASE WHEN NOT EXISTS (SELECT 1 FROM labels_in_force WHERE item_id = i.id) THEN ''
            ELSE (SELECT CASE WHEN count(*) = 1 THEN 'g' || max(label) ELSE '' END
                  FROM (SELECT label, count(*) AS votes, max(count(*)) OVER () AS top FROM labels_in_force
                        WHERE item_id = i.id GROUP BY label) WHERE votes = top) END AS gold
FROM items i;
CREATE VIEW score_set_rows AS
SELECT c.id AS item_id, c.task, c.lang, c.system, coalesce('r' || c.reference, '') AS reference,
       (SELECT g.gold FROM score_set_golds g WHERE g.item_id = c.id) AS gold,
       coalesce((SELECT group_concat(part, char(30)) FROM (
           SELECT v.judge_name || char(31) || v.status || char(31) || coalesce('v' || v.verdict, '') || char(31)
                  || coalesce(j.correct, '') || char(31)
                  || CASE
               WHEN substr(c.task, 1, 3) != 'c3/' THEN ''
               WHEN instr(coalesce(j.raw_output, ''), char(0)) > 0 OR instr(coalesce(j.raw_output, ''), char(1114111)) > 0 THEN '?'
               WHEN c.lang = 'en' THEN CASE WHEN
                   (instr(j.raw_output, 'The answer is: ') > 0
                    AND substr(substr(replace(j.raw_output, 'The answer is: ', char(1114111)),
                                      length(rtrim(replace(j.raw_output, 'The answer is: ', char(1114111)),
                                                   replace(j.raw_output, 'The answer is: ', ''))) + 1), 1, 3) IN ('Yes', 'yes'))
                   OR (instr(j.raw_output, 'the answer is: ') > 0
                    AND substr(substr(replace(j.raw_output, 'the answer is: ', char(1114111)),
                                      length(rtrim(replace(j.raw_output, 'the answer is: ', char(1114111)),
                                                   replace(j.raw_output, 'the answer is: ', ''))) + 1), 1, 3) IN ('Yes', 'yes'))
                   THEN '1' ELSE '0' END
               WHEN c.lang = 'zh' THEN CASE WHEN
                   instr(j.raw_output, '最终答案为：') > 0
                   AND substr(substr(replace(j.raw_output, '最终答案为：', char(1114111)),
                                     length(rtrim(replace(j.raw_output, '最终答案为：', char(1114111)),
                                                  replace(j.raw_output, '最终答案为：', ''))) + 1), 1, 1) = '是'
                   THEN '1' ELSE '0' END
               ELSE '?' END AS part
           FROM verdicts_in_force v JOIN judgments j ON j.id = v.judgment_id
           WHERE v.item_id = c.id ORDER BY v.judge_name)), '') AS verdicts
FROM items c
WHERE c.current = 1 AND NOT EXISTS (SELECT 1 FROM import_runs r WHERE r.id = c.import_run AND r.finished_at IS NULL)
  AND (EXISTS (SELECT 1 FROM verdicts_in_force v WHERE v.item_id = c.id)
       OR EXISTS (SELECT 1 FROM labels_in_force l WHERE l.item_id = c.id));
CREATE VIEW verdict_set_rows AS
SELECT c.id AS item_id, c.task, c.lang, c.system,
       (SELECT group_concat(v.judge_name || char(31) || CASE WHEN v.status = 'verdict' THEN 'v' || v.verdict ELSE 'u' END,
                            char(30))
        FROM verdicts_in_force v WHERE v.item_id = c.id AND v.status != 'error') AS verdicts
FROM counted_items c
WHERE EXISTS (SELECT 1 FROM verdicts_in_force v WHERE v.item_id = c.id AND v.status != 'error');
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
CREATE TRIGGER annotations_kept_unless_import_abandoned BEFORE DELETE ON annotations
WHEN NOT EXISTS (SELECT 1 FROM items i JOIN import_runs r ON r.id = i.import_run
                 WHERE i.id = old.item_id AND r.finished_at IS NULL AND r.owner IS NULL)
BEGIN
    SELECT RAISE(ABORT, 'annotations are append-only');
END;
CREATE TRIGGER annotations_no_update BEFORE UPDATE ON annotations
BEGIN
    SELECT RAISE(ABORT, 'annotations are append-only');
END;
CREATE TRIGGER cell_verdict_added AFTER INSERT ON verdicts_in_force
BEGIN
    INSERT INTO cell_verdicts SELECT * FROM cell_verdict_rows WHERE item_id = new.item_id AND judge_name = new.judge_name;
END;
CREATE TRIGGER cell_verdict_removed AFTER DELETE ON verdicts_in_force
BEGIN
    DELETE FROM cell_verdicts WHERE item_id = old.item_id AND judge_name = old.judge_name;
END;
CREATE TRIGGER cell_verdicts_confidence_changed AFTER UPDATE OF confidence ON judgments
WHEN old.confidence IS NOT new.confidence
BEGIN
    DELETE FROM cell_verdicts WHERE item_id = new.item_id AND judge_name = new.judge_name;
    INSERT INTO cell_verdicts SELECT * FROM cell_verdict_rows WHERE item_id = new.item_id AND judge_name = new.judge_name;
END;
CREATE TRIGGER cell_verdicts_import_shown AFTER UPDATE OF finished_at ON import_runs
WHEN old.finished_at IS NULL AND new.finished_at IS NOT NULL
BEGIN
    INSERT INTO cell_verdicts SELECT * FROM cell_verdict_rows r
    WHERE r.item_id BETWEEN (SELECT min(id) FROM items WHERE import_run = new.id)
                        AND (SELECT max(id) FROM items WHERE import_run = new.id)
      AND EXISTS (SELECT 1 FROM items WHERE id = r.item_id AND import_run = new.id);
END;
CREATE TRIGGER cell_verdicts_item_changed AFTER UPDATE OF current, task, lang, system, import_run ON items
WHEN old.current IS NOT new.current OR old.task IS NOT new.task OR old.lang IS NOT new.lang
  OR old.system IS NOT new.system OR old.import_run IS NOT new.import_run
BEGIN
    DELETE FROM cell_verdicts WHERE item_id = old.id;
    INSERT INTO cell_verdicts SELECT * FROM cell_verdict_rows WHERE item_id = new.id;
END;
CREATE TRIGGER cell_verdicts_label_added AFTER INSERT ON labels_in_force
BEGIN
    DELETE FROM cell_verdicts WHERE item_id = new.item_id;
    INSERT INTO cell_verdicts SELECT * FROM cell_verdict_rows WHERE item_id = new.item_id;
END;
CREATE TRIGGER cell_verdicts_label_removed AFTER DELETE ON labels_in_force
BEGIN
    DELETE FROM cell_verdicts WHERE item_id = old.item_id;
    INSERT INTO cell_verdicts SELECT * FROM cell_verdict_rows WHERE item_id = old.item_id;
END;
CREATE TRIGGER cell_verdicts_repeat_added AFTER INSERT ON judgments WHEN new.sample > 0
BEGIN
    UPDATE cell_verdicts SET repeated = 1 WHERE item_id = new.item_id AND judge_name = new.judge_name AND repeated = 0;
END;
CREATE TRIGGER cell_verdicts_repeat_removed AFTER DELETE ON judgments WHEN old.sample > 0
BEGIN
    UPDATE cell_verdicts SET repeated = EXISTS (
        SELECT 1 FROM judgments r WHERE r.item_id = old.item_id AND r.judge_name = old.judge_name AND r.sample > 0)
    WHERE item_id = old.item_id AND judge_name = old.judge_name;
END;
CREATE TRIGGER configuration_count_added AFTER INSERT ON verdicts_in_force
BEGIN
    INSERT INTO configuration_counts (task, lang, system, judge_name, judge_key, n)
    SELECT c.task, c.lang, c.system, new.judge_name, j.judge_key, 1
    FROM counted_items c, judgments j WHERE c.id = new.item_id AND j.id = new.judgment_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER configuration_count_removed AFTER DELETE ON verdicts_in_force
BEGIN
    INSERT INTO configuration_counts (task, lang, system, judge_name, judge_key, n)
    SELECT c.task, c.lang, c.system, old.judge_name, j.judge_key, -1
    FROM counted_items c, judgments j WHERE c.id = old.item_id AND j.id = old.judgment_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER configuration_counts_import_shown AFTER UPDATE OF finished_at ON import_runs
WHEN old.finished_at IS NULL AND new.finished_at IS NOT NULL
BEGIN
    INSERT INTO configuration_counts (task, lang, system, judge_name, judge_key, n)
    SELECT i.task, i.lang, i.system, v.judge_name, j.judge_key, count(*)
    FROM verdicts_in_force v CROSS JOIN items i ON i.id = v.item_id JOIN judgments j ON j.id = v.judgment_id
    WHERE v.item_id BETWEEN (SELECT min(id) FROM items WHERE import_run = new.id)
                        AND (SELECT max(id) FROM items WHERE import_run = new.id)
      AND i.import_run = new.id AND i.current = 1
    GROUP BY 1, 2, 3, 4, 5
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER configuration_counts_item_changed AFTER UPDATE OF current, task, lang, system, import_run ON items
WHEN old.current IS NOT new.current OR old.task IS NOT new.task OR old.lang IS NOT new.lang
  OR old.system IS NOT new.system OR old.import_run IS NOT new.import_run
BEGIN
    INSERT INTO configuration_counts (task, lang, system, judge_name, judge_key, n)
    SELECT old.task, old.lang, old.system, v.judge_name, j.judge_key, -count(*)
    FROM verdicts_in_force v JOIN judgments j ON j.id = v.judgment_id WHERE v.item_id = old.id AND old.current = 1
     AND NOT EXISTS (SELECT 1 FROM import_runs r WHERE r.id = old.import_run AND r.finished_at IS NULL)
    GROUP BY 1, 2, 3, 4, 5
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO configuration_counts (task, lang, system, judge_name, judge_key, n)
    SELECT new.task, new.lang, new.system, v.judge_name, j.judge_key, count(*)
    FROM verdicts_in_force v JOIN judgments j ON j.id = v.judgment_id WHERE v.item_id = new.id AND new.current = 1
     AND NOT EXISTS (SELECT 1 FROM import_runs r WHERE r.id = new.import_run AND r.finished_at IS NULL)
    GROUP BY 1, 2, 3, 4, 5
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER import_run_shown AFTER UPDATE OF finished_at ON import_runs
WHEN old.finished_at IS NULL AND new.finished_at IS NOT NULL
BEGIN
    INSERT INTO verdict_counts (task, lang, system, judge_name, status, n)
    SELECT i.task, i.lang, i.system, v.judge_name, v.status, count(*)
    FROM verdicts_in_force v CROSS JOIN items i ON i.id = v.item_id
    WHERE v.item_id BETWEEN (SELECT min(id) FROM items WHERE import_run = new.id)
                        AND (SELECT max(id) FROM items WHERE import_run = new.id)
      AND i.import_run = new.id AND i.current = 1
    GROUP BY 1, 2, 3, 4, 5
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO agreement_counts (task, lang, system, judge_name, annotator, status, verdict, label, n)
    SELECT i.task, i.lang, i.system, v.judge_name, l.annotator, v.status, coalesce(v.verdict, ''), l.label, count(*)
    FROM verdicts_in_force v CROSS JOIN items i ON i.id = v.item_id JOIN labels_in_force l ON l.item_id = i.id
    WHERE v.item_id BETWEEN (SELECT min(id) FROM items WHERE import_run = new.id)
                        AND (SELECT max(id) FROM items WHERE import_run = new.id)
      AND i.import_run = new.id AND i.current = 1
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER item_changed AFTER UPDATE OF current, task, lang, system, import_run ON items
WHEN old.current IS NOT new.current OR old.task IS NOT new.task OR old.lang IS NOT new.lang
  OR old.system IS NOT new.system OR old.import_run IS NOT new.import_run
BEGIN
    INSERT INTO verdict_counts (task, lang, system, judge_name, status, n)
    SELECT old.task, old.lang, old.system, v.judge_name, v.status, -count(*)
    FROM verdicts_in_force v WHERE v.item_id = old.id AND old.current = 1
     AND NOT EXISTS (SELECT 1 FROM import_runs r WHERE r.id = old.import_run AND r.finished_at IS NULL)
    GROUP BY 1, 2, 3, 4, 5
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO agreement_counts (task, lang, system, judge_name, annotator, status, verdict, label, n)
    SELECT old.task, old.lang, old.system, v.judge_name, l.annotator, v.status, coalesce(v.verdict, ''), l.label, -count(*)
    FROM verdicts_in_force v JOIN labels_in_force l ON l.item_id = v.item_id WHERE v.item_id = old.id AND old.current = 1
     AND NOT EXISTS (SELECT 1 FROM import_runs r WHERE r.id = old.import_run AND r.finished_at IS NULL)
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO verdict_counts (task, lang, system, judge_name, status, n)
    SELECT new.task, new.lang, new.system, v.judge_name, v.status, count(*)
    FROM verdicts_in_force v WHERE v.item_id = new.id AND new.current = 1
     AND NOT EXISTS (SELECT 1 FROM import_runs r WHERE r.id = new.import_run AND r.finished_at IS NULL)
    GROUP BY 1, 2, 3, 4, 5
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO agreement_counts (task, lang, system, judge_name, annotator, status, verdict, label, n)
    SELECT new.task, new.lang, new.system, v.judge_name, l.annotator, v.status, coalesce(v.verdict, ''), l.label, count(*)
    FROM verdicts_in_force v JOIN labels_in_force l ON l.item_id = v.item_id WHERE v.item_id = new.id AND new.current = 1
     AND NOT EXISTS (SELECT 1 FROM import_runs r WHERE r.id = new.import_run AND r.finished_at IS NULL)
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
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
CREATE TRIGGER judgment_added_to_repeats AFTER INSERT ON judgments
WHEN EXISTS (SELECT 1 FROM judgments r INDEXED BY judgments_repeats
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
CREATE TRIGGER judgment_removed_from_repeats AFTER DELETE ON judgments
WHEN EXISTS (SELECT 1 FROM judgments r INDEXED BY judgments_repeats
             WHERE r.item_id = old.item_id AND r.judge_name = old.judge_name AND r.sample > 0)
BEGIN
    DELETE FROM verdicts_in_force WHERE item_id = old.item_id AND judge_name = old.judge_name;
    INSERT INTO verdicts_in_force (item_id, judge_name, judgment_id, status, verdict, reason)
    SELECT item_id, judge_name, judgment_id, status, verdict, reason FROM verdicts_by_majority
    WHERE item_id = old.item_id AND judge_name = old.judge_name;
END;
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
CREATE TRIGGER label_in_force_added AFTER INSERT ON labels_in_force
BEGIN
    INSERT INTO agreement_counts (task, lang, system, judge_name, annotator, status, verdict, label, n)
    SELECT c.task, c.lang, c.system, v.judge_name, new.annotator, v.status, coalesce(v.verdict, ''), new.label, 1
    FROM counted_items c JOIN verdicts_in_force v ON v.item_id = c.id WHERE c.id = new.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER label_in_force_removed AFTER DELETE ON labels_in_force
BEGIN
    INSERT INTO agreement_counts (task, lang, system, judge_name, annotator, status, verdict, label, n)
    SELECT c.task, c.lang, c.system, v.judge_name, old.annotator, v.status, coalesce(v.verdict, ''), old.label, -1
    FROM counted_items c JOIN verdicts_in_force v ON v.item_id = c.id WHERE c.id = old.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER labels_in_force_no_update BEFORE UPDATE ON labels_in_force
BEGIN
    SELECT RAISE(ABORT, 'labels_in_force rows are replaced (delete, insert), never updated');
END;
CREATE TRIGGER score_set_deferral_ended AFTER DELETE ON score_set_deferrals
WHEN NOT EXISTS (SELECT 1 FROM score_set_deferrals)
BEGIN
    INSERT INTO score_set_counts (task, lang, system, reference, gold, verdicts, n)
    SELECT task, lang, system, reference, gold, verdicts, -count(*) FROM score_sets
    WHERE item_id IN (SELECT item_id FROM score_set_stale) GROUP BY 1, 2, 3, 4, 5, 6
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    DELETE FROM score_sets WHERE item_id IN (SELECT item_id FROM score_set_stale);
    INSERT INTO score_sets SELECT * FROM score_set_rows WHERE item_id IN (SELECT item_id FROM score_set_stale);
    INSERT INTO score_set_counts (task, lang, system, reference, gold, verdicts, n)
    SELECT task, lang, system, reference, gold, verdicts, count(*) FROM score_sets
    WHERE item_id IN (SELECT item_id FROM score_set_stale) GROUP BY 1, 2, 3, 4, 5, 6
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    DELETE FROM score_set_stale;
END;
CREATE TRIGGER score_set_import_shown AFTER UPDATE OF finished_at ON import_runs
WHEN old.finished_at IS NULL AND new.finished_at IS NOT NULL
BEGIN
    INSERT INTO score_sets SELECT * FROM score_set_rows
    WHERE item_id IN (SELECT t.item_id FROM (
                          SELECT item_id FROM verdicts_in_force
                          WHERE item_id BETWEEN (SELECT min(id) FROM items WHERE import_run = new.id)
                                            AND (SELECT max(id) FROM items WHERE import_run = new.id)
                          UNION
                          SELECT item_id FROM labels_in_force
                          WHERE item_id BETWEEN (SELECT min(id) FROM items WHERE import_run = new.id)
                                            AND (SELECT max(id) FROM items WHERE import_run = new.id)) t
                      WHERE EXISTS (SELECT 1 FROM items WHERE id = t.item_id AND import_run = new.id));
    INSERT INTO score_set_counts (task, lang, system, reference, gold, verdicts, n)
    SELECT s.task, s.lang, s.system, s.reference, s.gold, s.verdicts, count(*) FROM score_sets s
    WHERE s.item_id BETWEEN (SELECT min(id) FROM items WHERE import_run = new.id)
                        AND (SELECT max(id) FROM items WHERE import_run = new.id)
      AND EXISTS (SELECT 1 FROM items WHERE id = s.item_id AND import_run = new.id)
    GROUP BY 1, 2, 3, 4, 5, 6
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER score_set_item_changed AFTER UPDATE OF current, task, lang, system, import_run, reference ON items
WHEN old.current IS NOT new.current OR old.task IS NOT new.task OR old.lang IS NOT new.lang
  OR old.system IS NOT new.system OR old.import_run IS NOT new.import_run OR old.reference IS NOT new.reference
BEGIN
    INSERT INTO score_set_counts (task, lang, system, reference, gold, verdicts, n)
    SELECT task, lang, system, reference, gold, verdicts, -1 FROM score_sets WHERE item_id = old.id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    DELETE FROM score_sets WHERE item_id = old.id;
    INSERT INTO score_sets SELECT * FROM score_set_rows WHERE item_id = new.id;
    INSERT INTO score_set_counts (task, lang, system, reference, gold, verdicts, n)
    SELECT task, lang, system, reference, gold, verdicts, 1 FROM score_sets WHERE item_id = new.id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER score_set_item_removed AFTER DELETE ON items
BEGIN
    INSERT INTO score_set_counts (task, lang, system, reference, gold, verdicts, n)
    SELECT task, lang, system, reference, gold, verdicts, -1 FROM score_sets WHERE item_id = old.id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    DELETE FROM score_sets WHERE item_id = old.id;
END;
CREATE TRIGGER score_set_judgment_reread AFTER UPDATE OF correct, raw_output ON judgments
WHEN (old.correct IS NOT new.correct OR old.raw_output IS NOT new.raw_output)
 AND EXISTS (SELECT 1 FROM verdicts_in_force WHERE judgment_id = new.id)
BEGIN
    INSERT INTO score_set_counts (task, lang, system, reference, gold, verdicts, n)
    SELECT task, lang, system, reference, gold, verdicts, -1 FROM score_sets WHERE item_id = new.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    DELETE FROM score_sets WHERE item_id = new.item_id;
    INSERT INTO score_sets SELECT * FROM score_set_rows WHERE item_id = new.item_id;
    INSERT INTO score_set_counts (task, lang, system, reference, gold, verdicts, n)
    SELECT task, lang, system, reference, gold, verdicts, 1 FROM score_sets WHERE item_id = new.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER score_set_label_added AFTER INSERT ON labels_in_force
BEGIN
    INSERT INTO score_set_counts (task, lang, system, reference, gold, verdicts, n)
    SELECT task, lang, system, reference, gold, verdicts, -1 FROM score_sets WHERE item_id = new.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    UPDATE score_sets SET gold = (SELECT gold FROM score_set_golds WHERE item_id = new.item_id) WHERE item_id = new.item_id;
    INSERT INTO score_sets SELECT * FROM score_set_rows
    WHERE item_id = new.item_id AND NOT EXISTS (SELECT 1 FROM score_sets WHERE item_id = new.item_id);
    INSERT INTO score_set_counts (task, lang, system, reference, gold, verdicts, n)
    SELECT task, lang, system, reference, gold, verdicts, 1 FROM score_sets WHERE item_id = new.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER score_set_label_removed AFTER DELETE ON labels_in_force
BEGIN
    INSERT INTO score_set_counts (task, lang, system, reference, gold, verdicts, n)
    SELECT task, lang, system, reference, gold, verdicts, -1 FROM score_sets WHERE item_id = old.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    UPDATE score_sets SET gold = (SELECT gold FROM score_set_golds WHERE item_id = old.item_id) WHERE item_id = old.item_id;
    DELETE FROM score_sets
    WHERE item_id = old.item_id AND verdicts = '' AND NOT EXISTS (SELECT 1 FROM labels_in_force WHERE item_id = old.item_id);
    INSERT INTO score_set_counts (task, lang, system, reference, gold, verdicts, n)
    SELECT task, lang, system, reference, gold, verdicts, 1 FROM score_sets WHERE item_id = old.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER score_set_verdict_added AFTER INSERT ON verdicts_in_force
WHEN NOT EXISTS (SELECT 1 FROM score_set_deferrals)
BEGIN
    INSERT INTO score_set_counts (task, lang, system, reference, gold, verdicts, n)
    SELECT task, lang, system, reference, gold, verdicts, -1 FROM score_sets WHERE item_id = new.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    DELETE FROM score_sets WHERE item_id = new.item_id;
    INSERT INTO score_sets SELECT * FROM score_set_rows WHERE item_id = new.item_id;
    INSERT INTO score_set_counts (task, lang, system, reference, gold, verdicts, n)
    SELECT task, lang, system, reference, gold, verdicts, 1 FROM score_sets WHERE item_id = new.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER score_set_verdict_added_deferred AFTER INSERT ON verdicts_in_force
WHEN EXISTS (SELECT 1 FROM score_set_deferrals)
BEGIN
    INSERT OR IGNORE INTO score_set_stale (item_id) VALUES (new.item_id);
END;
CREATE TRIGGER score_set_verdict_removed AFTER DELETE ON verdicts_in_force
WHEN NOT EXISTS (SELECT 1 FROM score_set_deferrals)
BEGIN
    INSERT INTO score_set_counts (task, lang, system, reference, gold, verdicts, n)
    SELECT task, lang, system, reference, gold, verdicts, -1 FROM score_sets WHERE item_id = old.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    DELETE FROM score_sets WHERE item_id = old.item_id;
    INSERT INTO score_sets SELECT * FROM score_set_rows WHERE item_id = old.item_id;
    INSERT INTO score_set_counts (task, lang, system, reference, gold, verdicts, n)
    SELECT task, lang, system, reference, gold, verdicts, 1 FROM score_sets WHERE item_id = old.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER score_set_verdict_removed_deferred AFTER DELETE ON verdicts_in_force
WHEN EXISTS (SELECT 1 FROM score_set_deferrals)
BEGIN
    INSERT OR IGNORE INTO score_set_stale (item_id) VALUES (old.item_id);
END;
CREATE TRIGGER shared_items_label_added AFTER INSERT ON labels_in_force
WHEN (SELECT count(*) FROM labels_in_force WHERE item_id = new.item_id) >= 2
BEGIN
    INSERT OR IGNORE INTO shared_items (item_id) VALUES (new.item_id);
END;
CREATE TRIGGER shared_items_label_removed AFTER DELETE ON labels_in_force
WHEN (SELECT count(*) FROM labels_in_force WHERE item_id = old.item_id) < 2
BEGIN
    DELETE FROM shared_items WHERE item_id = old.item_id;
END;
CREATE TRIGGER verdict_in_force_added AFTER INSERT ON verdicts_in_force
BEGIN
    INSERT INTO verdict_counts (task, lang, system, judge_name, status, n)
    SELECT c.task, c.lang, c.system, new.judge_name, new.status, 1 FROM counted_items c WHERE c.id = new.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO agreement_counts (task, lang, system, judge_name, annotator, status, verdict, label, n)
    SELECT c.task, c.lang, c.system, new.judge_name, l.annotator, new.status, coalesce(new.verdict, ''), l.label, 1
    FROM counted_items c JOIN labels_in_force l ON l.item_id = c.id WHERE c.id = new.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER verdict_in_force_removed AFTER DELETE ON verdicts_in_force
BEGIN
    INSERT INTO verdict_counts (task, lang, system, judge_name, status, n)
    SELECT c.task, c.lang, c.system, old.judge_name, old.status, -1 FROM counted_items c WHERE c.id = old.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO agreement_counts (task, lang, system, judge_name, annotator, status, verdict, label, n)
    SELECT c.task, c.lang, c.system, old.judge_name, l.annotator, old.status, coalesce(old.verdict, ''), l.label, -1
    FROM counted_items c JOIN labels_in_force l ON l.item_id = c.id WHERE c.id = old.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER verdict_set_import_shown AFTER UPDATE OF finished_at ON import_runs
WHEN old.finished_at IS NULL AND new.finished_at IS NOT NULL
BEGIN
    INSERT INTO verdict_sets SELECT * FROM verdict_set_rows
    WHERE item_id IN (SELECT DISTINCT v.item_id FROM verdicts_in_force v
                      WHERE v.item_id BETWEEN (SELECT min(id) FROM items WHERE import_run = new.id)
                                          AND (SELECT max(id) FROM items WHERE import_run = new.id)
                        AND EXISTS (SELECT 1 FROM items WHERE id = v.item_id AND import_run = new.id));
    INSERT INTO verdict_set_counts (task, lang, system, verdicts, n)
    SELECT s.task, s.lang, s.system, s.verdicts, count(*) FROM verdict_sets s
    WHERE s.item_id BETWEEN (SELECT min(id) FROM items WHERE import_run = new.id)
                        AND (SELECT max(id) FROM items WHERE import_run = new.id)
      AND EXISTS (SELECT 1 FROM items WHERE id = s.item_id AND import_run = new.id)
    GROUP BY 1, 2, 3, 4
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO verdict_set_labels (task, lang, system, verdicts, annotator, label, n)
    SELECT s.task, s.lang, s.system, s.verdicts, l.annotator, l.label, count(*)
    FROM verdict_sets s JOIN labels_in_force l ON l.item_id = s.item_id
    WHERE s.item_id BETWEEN (SELECT min(id) FROM items WHERE import_run = new.id)
                        AND (SELECT max(id) FROM items WHERE import_run = new.id)
      AND EXISTS (SELECT 1 FROM items WHERE id = s.item_id AND import_run = new.id)
    GROUP BY 1, 2, 3, 4, 5, 6
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER verdict_set_item_changed AFTER UPDATE OF current, task, lang, system, import_run ON items
WHEN old.current IS NOT new.current OR old.task IS NOT new.task OR old.lang IS NOT new.lang
  OR old.system IS NOT new.system OR old.import_run IS NOT new.import_run
BEGIN
    INSERT INTO verdict_set_counts (task, lang, system, verdicts, n)
    SELECT task, lang, system, verdicts, -1 FROM verdict_sets WHERE item_id = old.id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO verdict_set_labels (task, lang, system, verdicts, annotator, label, n)
    SELECT s.task, s.lang, s.system, s.verdicts, l.annotator, l.label, -1
    FROM verdict_sets s JOIN labels_in_force l ON l.item_id = s.item_id WHERE s.item_id = old.id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    DELETE FROM verdict_sets WHERE item_id = old.id;
    INSERT INTO verdict_sets SELECT * FROM verdict_set_rows WHERE item_id = new.id;
    INSERT INTO verdict_set_counts (task, lang, system, verdicts, n)
    SELECT task, lang, system, verdicts, 1 FROM verdict_sets WHERE item_id = new.id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO verdict_set_labels (task, lang, system, verdicts, annotator, label, n)
    SELECT s.task, s.lang, s.system, s.verdicts, l.annotator, l.label, 1
    FROM verdict_sets s JOIN labels_in_force l ON l.item_id = s.item_id WHERE s.item_id = new.id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER verdict_set_label_added AFTER INSERT ON labels_in_force
BEGIN
    INSERT INTO verdict_set_labels (task, lang, system, verdicts, annotator, label, n)
    SELECT task, lang, system, verdicts, new.annotator, new.label, 1 FROM verdict_sets WHERE item_id = new.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER verdict_set_label_removed AFTER DELETE ON labels_in_force
BEGIN
    INSERT INTO verdict_set_labels (task, lang, system, verdicts, annotator, label, n)
    SELECT task, lang, system, verdicts, old.annotator, old.label, -1 FROM verdict_sets WHERE item_id = old.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER verdict_set_verdict_added AFTER INSERT ON verdicts_in_force
BEGIN
    INSERT INTO verdict_set_counts (task, lang, system, verdicts, n)
    SELECT task, lang, system, verdicts, -1 FROM verdict_sets WHERE item_id = new.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO verdict_set_labels (task, lang, system, verdicts, annotator, label, n)
    SELECT s.task, s.lang, s.system, s.verdicts, l.annotator, l.label, -1
    FROM verdict_sets s JOIN labels_in_force l ON l.item_id = s.item_id WHERE s.item_id = new.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    DELETE FROM verdict_sets WHERE item_id = new.item_id;
    INSERT INTO verdict_sets SELECT * FROM verdict_set_rows WHERE item_id = new.item_id;
    INSERT INTO verdict_set_counts (task, lang, system, verdicts, n)
    SELECT task, lang, system, verdicts, 1 FROM verdict_sets WHERE item_id = new.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO verdict_set_labels (task, lang, system, verdicts, annotator, label, n)
    SELECT s.task, s.lang, s.system, s.verdicts, l.annotator, l.label, 1
    FROM verdict_sets s JOIN labels_in_force l ON l.item_id = s.item_id WHERE s.item_id = new.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER verdict_set_verdict_removed AFTER DELETE ON verdicts_in_force
BEGIN
    INSERT INTO verdict_set_counts (task, lang, system, verdicts, n)
    SELECT task, lang, system, verdicts, -1 FROM verdict_sets WHERE item_id = old.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO verdict_set_labels (task, lang, system, verdicts, annotator, label, n)
    SELECT s.task, s.lang, s.system, s.verdicts, l.annotator, l.label, -1
    FROM verdict_sets s JOIN labels_in_force l ON l.item_id = s.item_id WHERE s.item_id = old.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    DELETE FROM verdict_sets WHERE item_id = old.item_id;
    INSERT INTO verdict_sets SELECT * FROM verdict_set_rows WHERE item_id = old.item_id;
    INSERT INTO verdict_set_counts (task, lang, system, verdicts, n)
    SELECT task, lang, system, verdicts, 1 FROM verdict_sets WHERE item_id = old.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO verdict_set_labels (task, lang, system, verdicts, annotator, label, n)
    SELECT s.task, s.lang, s.system, s.verdicts, l.annotator, l.label, 1
    FROM verdict_sets s JOIN labels_in_force l ON l.item_id = s.item_id WHERE s.item_id = old.item_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
CREATE TRIGGER verdicts_in_force_no_update BEFORE UPDATE ON verdicts_in_force
BEGIN
    SELECT RAISE(ABORT, 'verdicts_in_force rows are replaced (delete, insert), never updated');
END;
CREATE TABLE agreement_counts (
    task TEXT NOT NULL,
    lang TEXT NOT NULL,
    system TEXT NOT NULL,
    judge_name TEXT NOT NULL,
    annotator TEXT NOT NULL,
    status TEXT NOT NULL,
    verdict TEXT NOT NULL,              -- '' when the judgment has no verdict (unparsed, error)
    label TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (task, lang, system, judge_name, annotator, status, verdict, label)
) WITHOUT ROWID;
CREATE TABLE annotations (
    id INTEGER PRIMARY KEY,
    uid TEXT NOT NULL UNIQUE,           -- stable across databases, so merging is idempotent
    item_id INTEGER NOT NULL REFERENCES items (id),
    judgment_id INTEGER REFERENCES judgments (id),  -- the judgment shown, NULL in blind mode or none
    annotator TEXT NOT NULL,
    action TEXT NOT NULL CHECK (action IN ('confirm', 'override', 'label', 'skip', 'flag', 'note', 'undo')),
    label TEXT,                         -- the label this row leaves in force (NULL: none)
    reverts_id INTEGER REFERENCES annotations (id),  -- for undo: the row it reverses
    note TEXT,
    blind INTEGER NOT NULL DEFAULT 0,
    seconds_spent REAL,
    created_at TEXT NOT NULL
, audio_plays INTEGER, listened_seconds REAL, c3_file_judge TEXT, c3_file_text TEXT);
CREATE TABLE audio_roots (
    id INTEGER PRIMARY KEY,
    root TEXT NOT NULL UNIQUE,          -- absolute folder, as it was at import
    imported_at TEXT NOT NULL
);
CREATE TABLE batch_exports (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,                 -- the request file written, as given
    judge_name TEXT NOT NULL,
    exported_at TEXT NOT NULL,
    judged_after INTEGER NOT NULL       -- the newest judgment id when the batch was written
);
CREATE TABLE batch_requests (
    export_id INTEGER NOT NULL REFERENCES batch_exports (id),
    custom_id TEXT NOT NULL,
    item_id INTEGER NOT NULL,
    judge_key TEXT NOT NULL,
    sample INTEGER NOT NULL,
    PRIMARY KEY (export_id, custom_id)
);
CREATE TABLE cell_verdicts (
    labelled INTEGER NOT NULL,
    task TEXT NOT NULL,
    lang TEXT NOT NULL,
    judge_name TEXT NOT NULL,
    repeated INTEGER NOT NULL,
    system TEXT NOT NULL,
    status TEXT NOT NULL,
    verdict TEXT NOT NULL,
    label TEXT NOT NULL,
    response_length INTEGER NOT NULL,
    item_id INTEGER NOT NULL,
    confidence REAL,
    PRIMARY KEY (labelled, task, lang, judge_name, repeated, system, status, verdict, label, response_length, item_id)
) WITHOUT ROWID;
CREATE TABLE configuration_counts (
    task TEXT NOT NULL,
    lang TEXT NOT NULL,
    system TEXT NOT NULL,
    judge_name TEXT NOT NULL,
    judge_key TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (task, lang, system, judge_name, judge_key)
) WITHOUT ROWID;
CREATE TABLE data_tasks (
    task TEXT NOT NULL,
    lang TEXT NOT NULL,
    family TEXT NOT NULL,               -- the template family serving the task (inspect)
    labels TEXT NOT NULL,               -- JSON list, in the kind's order (the positive outcome first)
    PRIMARY KEY (task, lang)
) WITHOUT ROWID;
CREATE TABLE import_runs (
    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL,               -- what was imported (the command and file)
    pid INTEGER NOT NULL,               -- the importing process, to tell a dead run from a running one
    host TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT                    -- NULL while running: its items are hidden
, heartbeat_at REAL, owner TEXT);
CREATE TABLE item_audio (
    item_id INTEGER NOT NULL REFERENCES items (id),
    part TEXT NOT NULL,
    position INTEGER NOT NULL,          -- order of the clips within the item
    root_id INTEGER NOT NULL REFERENCES audio_roots (id),
    path TEXT NOT NULL,                 -- relative to the root
    duration REAL,                      -- seconds
    sample_rate INTEGER,                -- Hz
    checksum TEXT,                      -- sha256 of the file's bytes
    problem TEXT,                       -- why there is no audio (NULL when the clip is usable)
    PRIMARY KEY (item_id, part)
) WITHOUT ROWID;
CREATE TABLE items (
    id INTEGER PRIMARY KEY,
    task TEXT NOT NULL,                 -- family/name, e.g. c3/heterograph, superglue/boolq
    lang TEXT NOT NULL,                 -- en | zh
    source_id TEXT NOT NULL,            -- id in the source data: JSONL id, C3 path/index, SuperGLUE idx
    fields TEXT NOT NULL,               -- JSON object: the task's fields, named as in the source
    reference TEXT,                     -- reference answer or gold label, as text
    content_hash TEXT NOT NULL UNIQUE,  -- sha256 of task, lang, source_id, fields: a re-import is a no-op
    imported_at TEXT NOT NULL
, system TEXT NOT NULL DEFAULT '', version INTEGER NOT NULL DEFAULT 1, current INTEGER NOT NULL DEFAULT 1, import_run INTEGER REFERENCES import_runs (id), response_length INTEGER);
CREATE TABLE judge_claims (
    item_id INTEGER NOT NULL REFERENCES items (id),
    judge_key TEXT NOT NULL,
    sample INTEGER NOT NULL,
    holder TEXT NOT NULL,               -- the judge run: host, process id and a random tag
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    expires_at REAL NOT NULL,           -- unix seconds
    PRIMARY KEY (item_id, judge_key, sample)
) WITHOUT ROWID;
CREATE TABLE judge_runs (
    id INTEGER PRIMARY KEY,
    judge_name TEXT NOT NULL,
    model TEXT NOT NULL,                -- the model asked for
    server TEXT NOT NULL,               -- host:port
    params TEXT NOT NULL,               -- JSON: the request parameters, as in the judgments (mode switches included)
    started_at TEXT NOT NULL,
    finished_at TEXT,                   -- NULL while the run goes on (or if its process died)
    outcome TEXT CHECK (outcome IN ('finished', 'stopped', 'refused', 'interrupted')),
    message TEXT,                       -- why a stopped or refused run stopped
    items INTEGER NOT NULL,             -- items and samples (repeats) the run set out to ask
    samples INTEGER NOT NULL,
    stored INTEGER NOT NULL DEFAULT 0,  -- judgments stored, and of them:
    verdicts INTEGER NOT NULL DEFAULT 0,
    bare INTEGER NOT NULL DEFAULT 0,    -- verdicts given as the bare word
    unparsed INTEGER NOT NULL DEFAULT 0,
    truncated INTEGER NOT NULL DEFAULT 0, -- unparsed outputs cut at the token limit
    errors INTEGER NOT NULL DEFAULT 0,
    requests INTEGER NOT NULL DEFAULT 0, -- attempts sent, retries included
    retries INTEGER NOT NULL DEFAULT 0,
    failures TEXT NOT NULL DEFAULT '{}', -- JSON: failed attempts by cause ("timeout", "HTTP 429", ...) -> n
    concurrency INTEGER NOT NULL,       -- the ceiling asked for
    concurrency_lowest INTEGER          -- the lowest the adaptive limit went
, host TEXT, pid INTEGER, switched_to_reasoning INTEGER NOT NULL DEFAULT 0);
CREATE TABLE judgments (
    id INTEGER PRIMARY KEY,
    uid TEXT NOT NULL UNIQUE,           -- stable across databases, so merging is idempotent
    item_id INTEGER NOT NULL REFERENCES items (id),
    judge_name TEXT NOT NULL,           -- what the user calls this judge (model name by default)
    model TEXT,                         -- the model asked for
    model_reported TEXT,                -- the model the server said answered
    template_id TEXT,
    template_hash TEXT,                 -- version of the template that rendered the prompt
    params TEXT,                        -- JSON: request parameters (never the API key)
    judge_key TEXT NOT NULL,            -- hash of judge, model, template version, params: same key = same judge
    system_prompt TEXT,
    prompt TEXT,
    raw_output TEXT,
    status TEXT NOT NULL CHECK (status IN ('verdict', 'unparsed', 'error')),
    verdict TEXT,                       -- yes/no, 是/否, a label, or JSON scores
    unparsed_reason TEXT,
    correct INTEGER,                    -- SuperGLUE: verdict equals the gold label (1/0)
    confidence REAL,                    -- P(verdict) from logprobs, when the server gave them
    error TEXT,
    latency_ms REAL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    created_at TEXT NOT NULL
, sample INTEGER NOT NULL DEFAULT 0, judged_at TEXT NOT NULL DEFAULT '');
CREATE TABLE labels_in_force (
    item_id INTEGER NOT NULL REFERENCES items (id),
    annotator TEXT NOT NULL,
    label TEXT NOT NULL,
    action TEXT NOT NULL,               -- confirm | override | label: how the deciding row labelled
    judgment_id INTEGER REFERENCES judgments (id),
    annotation_uid TEXT NOT NULL,       -- the deciding annotation
    decided_at TEXT NOT NULL,           -- its created_at
    PRIMARY KEY (item_id, annotator)
) WITHOUT ROWID;
CREATE TABLE leases (
    item_id INTEGER NOT NULL REFERENCES items (id),
    annotator TEXT NOT NULL,
    expires_at REAL NOT NULL,           -- unix seconds; an expired lease is free again
    PRIMARY KEY (item_id, annotator)
) WITHOUT ROWID;
CREATE TABLE score_set_counts (
    task TEXT NOT NULL,
    lang TEXT NOT NULL,
    system TEXT NOT NULL,
    reference TEXT NOT NULL,
    gold TEXT NOT NULL,
    verdicts TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (task, lang, system, reference, gold, verdicts)
) WITHOUT ROWID;
CREATE TABLE score_set_deferrals (writer INTEGER PRIMARY KEY);
CREATE TABLE score_set_stale (item_id INTEGER PRIMARY KEY);
CREATE TABLE score_sets (
    item_id INTEGER PRIMARY KEY,
    task TEXT NOT NULL,
    lang TEXT NOT NULL,
    system TEXT NOT NULL,
    reference TEXT NOT NULL,
    gold TEXT NOT NULL,
    verdicts TEXT NOT NULL
);
CREATE TABLE shared_items (
    item_id INTEGER PRIMARY KEY
);
CREATE TABLE stratified_orders (
    scope TEXT NOT NULL,        -- the session's filter: JSON [task, lang, system], null for any
    seed INTEGER NOT NULL,
    items_stamp TEXT NOT NULL,
    ids BLOB NOT NULL,          -- the queue's item ids in order, 8 bytes each, little-endian
    made_at TEXT NOT NULL,
    PRIMARY KEY (scope, seed)
) WITHOUT ROWID;
CREATE TABLE verdict_counts (
    task TEXT NOT NULL,
    lang TEXT NOT NULL,
    system TEXT NOT NULL,
    judge_name TEXT NOT NULL,
    status TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (task, lang, system, judge_name, status)
) WITHOUT ROWID;
CREATE TABLE verdict_set_counts (
    task TEXT NOT NULL,
    lang TEXT NOT NULL,
    system TEXT NOT NULL,
    verdicts TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (task, lang, system, verdicts)
) WITHOUT ROWID;
CREATE TABLE verdict_set_labels (
    task TEXT NOT NULL,
    lang TEXT NOT NULL,
    system TEXT NOT NULL,
    verdicts TEXT NOT NULL,
    annotator TEXT NOT NULL,
    label TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (task, lang, system, verdicts, annotator, label)
) WITHOUT ROWID;
CREATE TABLE verdict_sets (
    item_id INTEGER PRIMARY KEY,
    task TEXT NOT NULL,
    lang TEXT NOT NULL,
    system TEXT NOT NULL,
    verdicts TEXT NOT NULL
);
CREATE TABLE verdicts_in_force (
    item_id INTEGER NOT NULL REFERENCES items (id),
    judge_name TEXT NOT NULL,
    judgment_id INTEGER NOT NULL REFERENCES judgments (id),
    status TEXT NOT NULL,
    verdict TEXT, reason TEXT,
    PRIMARY KEY (item_id, judge_name)
) WITHOUT ROWID;
CREATE INDEX annotations_by_annotator ON annotations (annotator, id);
CREATE INDEX annotations_by_item ON annotations (item_id, annotator);
CREATE INDEX annotations_by_judgment ON annotations (judgment_id) WHERE judgment_id IS NOT NULL;
CREATE INDEX annotations_by_reverts ON annotations (reverts_id) WHERE reverts_id IS NOT NULL;
CREATE INDEX batch_requests_by_custom_id ON batch_requests (custom_id);
CREATE INDEX cell_verdicts_by_item ON cell_verdicts (item_id, judge_name);
CREATE INDEX import_runs_unfinished ON import_runs (id) WHERE finished_at IS NULL;
CREATE INDEX item_audio_by_root ON item_audio (root_id);
CREATE INDEX items_by_cell ON items (task, lang, system) WHERE current = 1;
CREATE INDEX items_by_import_run ON items (import_run) WHERE import_run IS NOT NULL;
CREATE INDEX items_by_source_id ON items (source_id);
CREATE INDEX items_by_task_lang ON items (task, lang);
CREATE UNIQUE INDEX items_identity ON items (task, lang, system, source_id, version);
CREATE INDEX judgments_by_item ON judgments (item_id, judge_name);
CREATE INDEX judgments_by_key ON judgments (judge_key, item_id);
CREATE INDEX judgments_by_key_sample ON judgments (judge_key, item_id, sample);
CREATE INDEX judgments_repeated_or_confident ON judgments (id) WHERE sample > 0 OR confidence IS NOT NULL;
CREATE INDEX judgments_repeats ON judgments (item_id, judge_name) WHERE sample > 0;
CREATE INDEX judgments_unparsed ON judgments (unparsed_reason) WHERE status = 'unparsed';
CREATE INDEX labels_in_force_by_annotator ON labels_in_force (annotator, item_id);
CREATE INDEX labels_in_force_by_judgment ON labels_in_force (judgment_id) WHERE judgment_id IS NOT NULL;
CREATE INDEX labels_in_force_by_time ON labels_in_force (annotator, decided_at);
CREATE INDEX verdicts_in_force_by_judgment ON verdicts_in_force (judgment_id);
CREATE INDEX verdicts_in_force_errors ON verdicts_in_force (item_id, judge_name) WHERE status = 'error';
