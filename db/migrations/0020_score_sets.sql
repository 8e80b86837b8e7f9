-- 0020_score_sets: what `calibrate scores` tells apart of each counted item (its cell, reference,
-- gold label, and every verdict in force with the judgment's `correct` and C3's rule read from its
-- raw output), and those items counted, so that the scores read a few hundred counted rows instead
-- of every item with its verdicts, labels and judgments. Triggers keep them in step with every
-- write, in the writer's transaction, as migration 0018's triggers keep the jury's sets. Applied
-- once, never edited.
--
-- score_sets: one row per counted item that has a verdict in force or a label in force (items
-- with neither are counted by the reader from the items' cell index), with
-- reference: 'r' followed by the item's reference, '' when it has none;
-- gold: 'g' followed by the strict majority of its labels in force (`calibrate.gold` without an
--   adjudicator), '' when it is unlabelled or the labels tie;
-- verdicts: for each verdict in force, in judge name order, the judges separated by char(30), the
--   judge's name, status, 'v' and the verdict ('' when it has none), the judgment's `correct`
--   ('' when NULL) and C3's rule, separated by char(31).
-- C3's rule (`calibrate.formats.c3.c3_right`, on items whose task starts with 'c3/'; '' on the
-- others): '1' when, for one of the language's markers, the raw output holds the marker and the
-- piece after its last occurrence starts with the language's "yes", else '0'; '?' when this SQL
-- cannot read it (an output holding char(0) or the stand-in U+10FFFF, or a language C3 does not
-- have), for the reader to apply the rule itself. The piece after the last marker: with every
-- marker replaced by the stand-in, rtrim strips from the right every character but the stand-in
-- (the set of characters of the output without its markers), so it stops after the last one.
-- No marker overlaps itself, so replace() finds the occurrences str.rfind does.
-- score_set_counts: items per cell, reference, gold label and set of verdicts. A count that has
-- dropped to 0 stays as a row; readers skip it.

CREATE TABLE score_sets (
    item_id INTEGER PRIMARY KEY,
    task TEXT NOT NULL,
    lang TEXT NOT NULL,
    system TEXT NOT NULL,
    reference TEXT NOT NULL,
    gold TEXT NOT NULL,
    verdicts TEXT NOT NULL
);

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

-- each item's `gold` column (the triggers select one item's)
CREATE VIEW score_set_golds AS
SELECT i.id AS item_id,
       CASE WHEN NOT EXISTS (SELECT 1 FROM labels_in_force WHERE item_id = i.id) THEN ''
            ELSE (SELECT CASE WHEN count(*) = 1 THEN 'g' || max(label) ELSE '' END
                  FROM (SELECT label, count(*) AS votes, max(count(*)) OVER () AS top FROM labels_in_force
                        WHERE item_id = i.id GROUP BY label) WHERE votes = top) END AS gold
FROM items i;

-- the score_sets rows as they are now (the triggers select one item's), over the counted items
-- (`counted_items`, read from `items` here for the reference too)
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

INSERT INTO score_sets SELECT * FROM score_set_rows;

INSERT INTO score_set_counts (task, lang, system, reference, gold, verdicts, n)
SELECT task, lang, system, reference, gold, verdicts, count(*) FROM score_sets GROUP BY 1, 2, 3, 4, 5, 6;

-- an item's row is taken out of the counts, written again and counted again whenever what it
-- holds may have changed: a verdict in force added or removed, the item starting or stopping
-- being counted, its cell or reference changed, the judgment in force re-read; a label in force
-- added or removed changes its gold label only (an item with neither a verdict nor a label in
-- force has no row)

CREATE TRIGGER score_set_verdict_added AFTER INSERT ON verdicts_in_force
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

CREATE TRIGGER score_set_import_shown AFTER UPDATE OF finished_at ON import_runs
WHEN old.finished_at IS NULL AND new.finished_at IS NOT NULL
BEGIN
    INSERT INTO score_sets SELECT * FROM score_set_rows WHERE item_id IN (SELECT id FROM items WHERE import_run = new.id);
    INSERT INTO score_set_counts (task, lang, system, reference, gold, verdicts, n)
    SELECT task, lang, system, reference, gold, verdicts, count(*) FROM score_sets
    WHERE item_id IN (SELECT id FROM items WHERE import_run = new.id) GROUP BY 1, 2, 3, 4, 5, 6
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
