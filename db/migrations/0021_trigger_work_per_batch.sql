-- 0021_trigger_work_per_batch: the triggers' work for two kinds of write done per batch rather than per item.
-- (1) A writer storing many judgments at once rewrites each touched item's score_sets row once,
-- at the end of its batch, instead of once per verdict in force added or removed (0020's
-- triggers rewrite it per row, which makes a batch of judgments cost about 1.3 times what it
-- costs without score_sets). (2) An import run that finishes is shown by looking up only its
-- items with a verdict or a label in force (below). Applied once, never edited.
--
-- score_set_deferrals: one row while a writer's transaction defers the rewrite (the writer adds
-- it after BEGIN and deletes it before COMMIT, so no other connection ever sees it);
-- score_set_stale: meanwhile, the items whose verdicts in force changed. Deleting the deferral
-- row rewrites those items' rows and counts, as 0020's triggers would have one by one: the
-- counts end the same (a count that only an in-between state would have touched is not written,
-- which readers cannot tell from a row at 0).

CREATE TABLE score_set_deferrals (writer INTEGER PRIMARY KEY);

CREATE TABLE score_set_stale (item_id INTEGER PRIMARY KEY);

DROP TRIGGER score_set_verdict_added;

DROP TRIGGER score_set_verdict_removed;

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

CREATE TRIGGER score_set_verdict_added_deferred AFTER INSERT ON verdicts_in_force
WHEN EXISTS (SELECT 1 FROM score_set_deferrals)
BEGIN
    INSERT OR IGNORE INTO score_set_stale (item_id) VALUES (new.item_id);
END;

CREATE TRIGGER score_set_verdict_removed_deferred AFTER DELETE ON verdicts_in_force
WHEN EXISTS (SELECT 1 FROM score_set_deferrals)
BEGIN
    INSERT OR IGNORE INTO score_set_stale (item_id) VALUES (old.item_id);
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

-- An import run that finishes shows its items: the four triggers below (0008's, 0017's, 0018's
-- and 0020's, rewritten) count and write the run's items that have a verdict or a label in force,
-- found from those tables' keys between the run's lowest and highest item id (two look-ups in
-- items_by_import_run), instead of looking up every item of the run: a run of items alone is
-- shown in constant time, and the finishing transaction holds the write lock only as long as the
-- run's judged or labelled items take.

DROP TRIGGER import_run_shown;

DROP TRIGGER cell_verdicts_import_shown;

DROP TRIGGER verdict_set_import_shown;

DROP TRIGGER score_set_import_shown;

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

CREATE TRIGGER cell_verdicts_import_shown AFTER UPDATE OF finished_at ON import_runs
WHEN old.finished_at IS NULL AND new.finished_at IS NOT NULL
BEGIN
    INSERT INTO cell_verdicts SELECT * FROM cell_verdict_rows r
    WHERE r.item_id BETWEEN (SELECT min(id) FROM items WHERE import_run = new.id)
                        AND (SELECT max(id) FROM items WHERE import_run = new.id)
      AND EXISTS (SELECT 1 FROM items WHERE id = r.item_id AND import_run = new.id);
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
