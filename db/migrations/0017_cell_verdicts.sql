-- 0017_cell_verdicts: each judge's verdict in force on each counted item, filed by cell with what
-- the reliability figures and trust thresholds read of it (the item's label in force when it
-- has one, the judgment's confidence, the response's length), so that they read a few hundred
-- groups of rows in key order instead of joining items, judgments and labels per item. Triggers
-- keep it in step with every write, in the writer's transaction, as migration 0008's triggers
-- keep the counts. Applied once, never edited.
--
-- items.response_length: the number of characters of the item's `response` field when it is a
-- string (NULL otherwise), stored when the item is written (the length-bias probe reads it).
--
-- cell_verdicts: one row per row of verdicts_in_force on a counted item (counted_items), with
-- labelled: how many labels are in force on the item (0, 1, or 2 for two or more);
-- label: the one label in force when labelled = 1, else '';
-- repeated: 1 when the judge has a repeat of the item (a judgment with sample > 0): its verdict
--   is then the majority of the samples, which the readers take from the judgments;
-- verdict: '' when the judgment has none (unparsed, error);
-- response_length: the item's response length, -1 when it has none;
-- confidence: the judgment's stored confidence.
-- The key puts the rows of one group (labelled, task, lang, judge, repeated, system, status,
-- verdict, label, response length) side by side, so a reader counts each group and gathers its
-- confidences without sorting.

ALTER TABLE items ADD COLUMN response_length INTEGER;

UPDATE items SET response_length = length(json_extract(fields, '$.response'))
WHERE json_type(fields, '$.response') = 'text';

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

CREATE INDEX cell_verdicts_by_item ON cell_verdicts (item_id, judge_name);

-- the cell_verdicts rows of the verdicts in force, as they are now (the triggers select the rows
-- of one item, or of one item and judge)
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

INSERT INTO cell_verdicts SELECT * FROM cell_verdict_rows
ORDER BY labelled, task, lang, judge_name, repeated, system, status, verdict, label, response_length, item_id;

CREATE TRIGGER cell_verdict_added AFTER INSERT ON verdicts_in_force
BEGIN
    INSERT INTO cell_verdicts SELECT * FROM cell_verdict_rows WHERE item_id = new.item_id AND judge_name = new.judge_name;
END;

CREATE TRIGGER cell_verdict_removed AFTER DELETE ON verdicts_in_force
BEGIN
    DELETE FROM cell_verdicts WHERE item_id = old.item_id AND judge_name = old.judge_name;
END;

-- a label in force added or removed changes the item's labelled and label

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

-- a repeat written or removed changes `repeated` (whichever verdict is in force)

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

-- a judgment's confidence changed (as an edit of the file may do)

CREATE TRIGGER cell_verdicts_confidence_changed AFTER UPDATE OF confidence ON judgments
WHEN old.confidence IS NOT new.confidence
BEGIN
    DELETE FROM cell_verdicts WHERE item_id = new.item_id AND judge_name = new.judge_name;
    INSERT INTO cell_verdicts SELECT * FROM cell_verdict_rows WHERE item_id = new.item_id AND judge_name = new.judge_name;
END;

-- an item that starts or stops being counted, or whose cell changes, is filed again

CREATE TRIGGER cell_verdicts_item_changed AFTER UPDATE OF current, task, lang, system, import_run ON items
WHEN old.current IS NOT new.current OR old.task IS NOT new.task OR old.lang IS NOT new.lang
  OR old.system IS NOT new.system OR old.import_run IS NOT new.import_run
BEGIN
    DELETE FROM cell_verdicts WHERE item_id = old.id;
    INSERT INTO cell_verdicts SELECT * FROM cell_verdict_rows WHERE item_id = new.id;
END;

-- an import run that finishes shows its items

CREATE TRIGGER cell_verdicts_import_shown AFTER UPDATE OF finished_at ON import_runs
WHEN old.finished_at IS NULL AND new.finished_at IS NOT NULL
BEGIN
    INSERT INTO cell_verdicts SELECT * FROM cell_verdict_rows
    WHERE item_id IN (SELECT id FROM items WHERE import_run = new.id);
END;
