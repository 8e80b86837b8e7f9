-- 0018_verdict_sets: what the judges said of each counted item, all of them at once, and those
-- sets counted, so that the report's jury (several judges combined per item) reads a few hundred
-- counted rows instead of pivoting every verdict in force. Triggers keep them in step with
-- every write, in the writer's transaction, as migration 0008's triggers keep the counts.
-- Applied once, never edited.
--
-- verdict_sets: per counted item with a verdict in force that is not an error, `verdicts`: for
-- each such judge in name order, its name, char(31), then 'v' and the verdict (parsed) or 'u'
-- (unparsed), the judges separated by char(30).
-- verdict_set_counts: items per task, language, system and set.
-- verdict_set_labels: labels in force per task, language, system, set, annotator and label.
-- A count that has dropped to 0 stays as a row; readers skip it.

CREATE TABLE verdict_sets (
    item_id INTEGER PRIMARY KEY,
    task TEXT NOT NULL,
    lang TEXT NOT NULL,
    system TEXT NOT NULL,
    verdicts TEXT NOT NULL
);

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

-- the verdict_sets rows as they are now (the triggers select one item's)
CREATE VIEW verdict_set_rows AS
SELECT c.id AS item_id, c.task, c.lang, c.system,
       (SELECT group_concat(v.judge_name || char(31) || CASE WHEN v.status = 'verdict' THEN 'v' || v.verdict ELSE 'u' END,
                            char(30))
        FROM verdicts_in_force v WHERE v.item_id = c.id AND v.status != 'error') AS verdicts
FROM counted_items c
WHERE EXISTS (SELECT 1 FROM verdicts_in_force v WHERE v.item_id = c.id AND v.status != 'error');

INSERT INTO verdict_sets SELECT * FROM verdict_set_rows;

INSERT INTO verdict_set_counts (task, lang, system, verdicts, n)
SELECT task, lang, system, verdicts, count(*) FROM verdict_sets GROUP BY 1, 2, 3, 4;

INSERT INTO verdict_set_labels (task, lang, system, verdicts, annotator, label, n)
SELECT s.task, s.lang, s.system, s.verdicts, l.annotator, l.label, count(*)
FROM verdict_sets s JOIN labels_in_force l ON l.item_id = s.item_id GROUP BY 1, 2, 3, 4, 5, 6;

-- an item's set is taken out of the counts, written again and counted again whenever one of
-- its verdicts in force changes, and when it starts or stops being counted or its cell changes

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

CREATE TRIGGER verdict_set_import_shown AFTER UPDATE OF finished_at ON import_runs
WHEN old.finished_at IS NULL AND new.finished_at IS NOT NULL
BEGIN
    INSERT INTO verdict_sets SELECT * FROM verdict_set_rows WHERE item_id IN (SELECT id FROM items WHERE import_run = new.id);
    INSERT INTO verdict_set_counts (task, lang, system, verdicts, n)
    SELECT task, lang, system, verdicts, count(*) FROM verdict_sets
    WHERE item_id IN (SELECT id FROM items WHERE import_run = new.id) GROUP BY 1, 2, 3, 4
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO verdict_set_labels (task, lang, system, verdicts, annotator, label, n)
    SELECT s.task, s.lang, s.system, s.verdicts, l.annotator, l.label, count(*)
    FROM verdict_sets s JOIN labels_in_force l ON l.item_id = s.item_id
    WHERE s.item_id IN (SELECT id FROM items WHERE import_run = new.id) GROUP BY 1, 2, 3, 4, 5, 6
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

-- a label in force added or removed counts for its item's set

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
