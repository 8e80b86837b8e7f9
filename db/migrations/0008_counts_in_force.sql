-- 0008_counts_in_force: the agreement report's counts, kept as data so that a report over a
-- million labels reads a few hundred rows instead of joining a million. Triggers keep them in
-- step with every write, whatever writes it (a judge run, a re-parse, labelling, an undo, a
-- merge, a new item version, an import run finishing), in the writer's own transaction.
--
-- verdicts_in_force: each judge's newest judgment (highest id) per item, as labels_in_force
-- holds each annotator's label in force.
-- counted_items: the items the report counts: the current version, not hidden by an
-- unfinished import run (the store's VISIBLE condition).
-- verdict_counts: judgments in force per task, language, system, judge and status, over
-- counted items.
-- agreement_counts: judgment in force x label in force per task, language, system, judge,
-- annotator, status, verdict ('' when the judgment has none) and label, over counted items.
-- A count that has dropped to 0 stays as a row; readers skip it.

CREATE TABLE verdicts_in_force (
    item_id INTEGER NOT NULL REFERENCES items (id),
    judge_name TEXT NOT NULL,
    judgment_id INTEGER NOT NULL REFERENCES judgments (id),
    status TEXT NOT NULL,
    verdict TEXT,
    PRIMARY KEY (item_id, judge_name)
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

CREATE VIEW counted_items AS
SELECT i.id, i.task, i.lang, i.system FROM items i
WHERE i.current = 1 AND NOT EXISTS (SELECT 1 FROM import_runs r WHERE r.id = i.import_run AND r.finished_at IS NULL);

-- whether any judgment is a repeat or has a confidence, answered without a scan
CREATE INDEX judgments_repeated_or_confident ON judgments (id) WHERE sample > 0 OR confidence IS NOT NULL;

INSERT INTO verdicts_in_force (item_id, judge_name, judgment_id, status, verdict)
SELECT item_id, judge_name, id, status, verdict FROM judgments
WHERE id IN (SELECT max(id) FROM judgments GROUP BY item_id, judge_name);

INSERT INTO verdict_counts (task, lang, system, judge_name, status, n)
SELECT c.task, c.lang, c.system, v.judge_name, v.status, count(*)
FROM counted_items c JOIN verdicts_in_force v ON v.item_id = c.id
GROUP BY 1, 2, 3, 4, 5;

INSERT INTO agreement_counts (task, lang, system, judge_name, annotator, status, verdict, label, n)
SELECT c.task, c.lang, c.system, v.judge_name, l.annotator, v.status, coalesce(v.verdict, ''), l.label, count(*)
FROM counted_items c JOIN verdicts_in_force v ON v.item_id = c.id JOIN labels_in_force l ON l.item_id = c.id
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;

-- judgments -> verdicts_in_force

CREATE TRIGGER judgment_added AFTER INSERT ON judgments
BEGIN
    DELETE FROM verdicts_in_force
    WHERE item_id = new.item_id AND judge_name = new.judge_name AND judgment_id < new.id;
    INSERT OR IGNORE INTO verdicts_in_force (item_id, judge_name, judgment_id, status, verdict)
    VALUES (new.item_id, new.judge_name, new.id, new.status, new.verdict);
END;

CREATE TRIGGER judgment_reparsed AFTER UPDATE OF status, verdict ON judgments
WHEN old.status IS NOT new.status OR old.verdict IS NOT new.verdict
BEGIN
    DELETE FROM verdicts_in_force
    WHERE item_id = new.item_id AND judge_name = new.judge_name AND judgment_id = new.id;
    INSERT OR IGNORE INTO verdicts_in_force (item_id, judge_name, judgment_id, status, verdict)
    SELECT new.item_id, new.judge_name, new.id, new.status, new.verdict
    WHERE NOT EXISTS (SELECT 1 FROM judgments WHERE item_id = new.item_id AND judge_name = new.judge_name AND id > new.id);
END;

CREATE TRIGGER judgment_removed AFTER DELETE ON judgments
BEGIN
    DELETE FROM verdicts_in_force
    WHERE item_id = old.item_id AND judge_name = old.judge_name AND judgment_id = old.id;
    INSERT INTO verdicts_in_force (item_id, judge_name, judgment_id, status, verdict)
    SELECT item_id, judge_name, id, status, verdict FROM judgments
    WHERE item_id = old.item_id AND judge_name = old.judge_name ORDER BY id DESC LIMIT 1
    ON CONFLICT DO NOTHING;
END;

-- verdicts_in_force and labels_in_force change by deleting a row and inserting its successor,
-- so the counts need only the insert and delete triggers below

CREATE TRIGGER verdicts_in_force_no_update BEFORE UPDATE ON verdicts_in_force
BEGIN
    SELECT RAISE(ABORT, 'verdicts_in_force rows are replaced (delete, insert), never updated');
END;

CREATE TRIGGER labels_in_force_no_update BEFORE UPDATE ON labels_in_force
BEGIN
    SELECT RAISE(ABORT, 'labels_in_force rows are replaced (delete, insert), never updated');
END;

-- verdicts_in_force -> counts

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


-- labels_in_force -> counts

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


-- an item that starts or stops being counted (a newer version supersedes it), or whose cell
-- changes: its part leaves the counts as it was and joins them as it is.

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

-- an import run that finishes shows its items (an unfinished run is removed only after its
-- items, by Store.abandon_import, so its removal shows nothing)

CREATE TRIGGER import_run_shown AFTER UPDATE OF finished_at ON import_runs
WHEN old.finished_at IS NULL AND new.finished_at IS NOT NULL
BEGIN
    INSERT INTO verdict_counts (task, lang, system, judge_name, status, n)
    SELECT i.task, i.lang, i.system, v.judge_name, v.status, count(*)
    FROM items i JOIN verdicts_in_force v ON v.item_id = i.id WHERE i.import_run = new.id AND i.current = 1
    GROUP BY 1, 2, 3, 4, 5
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO agreement_counts (task, lang, system, judge_name, annotator, status, verdict, label, n)
    SELECT i.task, i.lang, i.system, v.judge_name, l.annotator, v.status, coalesce(v.verdict, ''), l.label, count(*)
    FROM items i JOIN verdicts_in_force v ON v.item_id = i.id JOIN labels_in_force l ON l.item_id = i.id
    WHERE i.import_run = new.id AND i.current = 1
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

