-- 0025_configuration_counts: which configurations of each judge its verdicts in force come
-- from. A judge's configuration (judgments.judge_key: its model, server, template version and
-- request parameters) is its identity: a run under another one asks every item again, and each
-- answer it stores becomes the judge's verdict in force on its item, so until it has answered
-- them all a judge name holds verdicts of two configurations. The report, the scores and trust
-- read these counts to say so beside the judge, a few rows per judge whatever the number of
-- judgments.
--
-- configuration_counts: verdicts in force per task, language, system, judge and configuration,
-- over counted items (current, not hidden by an unfinished import), kept by the triggers below
-- in the writer's transaction as verdict_counts is (migration 0008). A count that has dropped
-- to 0 stays as a row; readers skip it. (A verdict in force leaves when its judgment is deleted
-- only for the items of an unfinished import, which are not counted.) Applied once, never edited.

CREATE TABLE configuration_counts (
    task TEXT NOT NULL,
    lang TEXT NOT NULL,
    system TEXT NOT NULL,
    judge_name TEXT NOT NULL,
    judge_key TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (task, lang, system, judge_name, judge_key)
) WITHOUT ROWID;

INSERT INTO configuration_counts (task, lang, system, judge_name, judge_key, n)
SELECT c.task, c.lang, c.system, v.judge_name, j.judge_key, count(*)
FROM counted_items c JOIN verdicts_in_force v ON v.item_id = c.id JOIN judgments j ON j.id = v.judgment_id
GROUP BY 1, 2, 3, 4, 5;

-- verdicts in force are replaced (deleted, then inserted), never updated

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
