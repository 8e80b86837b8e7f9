-- 0027_facts_as_columns: facts that were kept as the start of text meant for people (or not at
-- all) become columns, so that no wording a person reads (or writes) is taken for data; and an
-- index of each person's labels in force by time.
--
-- annotations.c3_file_judge: the judge whose C3 generation result files held this label (as
-- `import c3-results` stored it), NULL for every other label. C3 counts each judge's own file
-- decision on a generation item, so `scores`' C3-rule column and `export c3` read each judge's
-- own latest labelling row by it. Until now the importer noted the label "in the C3 result files
-- of judge <name>" and that note was read back by its start, so a person's note starting so was
-- taken for a judge's file. The note stays, for people; the code reads the column.
--
-- annotations.c3_file_text: beside c3_file_judge, that file's check_answer where it is not C3's
-- own line for the label (`The answer is: Yes.` where C3 writes `yes.`), NULL where it is, so that
-- `export c3` gives back the judge's own file as it was. Nothing before this migration kept it.
--
-- judge_runs.switched_to_reasoning: 1 where the run switched to reasoning mode on its own (the
-- server refused temperature / max_tokens), so the next run of that judge on that server and
-- model starts in it; its message still says so, for people.
--
-- labels_in_force_by_time: a person's labels in force in the order they were decided, so
-- the app lists their latest labels (`H`) at once on a million items, whatever order merges
-- appended them in.
--
-- c3_file_judge and switched_to_reasoning are filled from the text the calibrate before this migration wrote: a labelling row
-- noted "in the C3 result files of judge <name>" (such a note a person wrote on their own label
-- cannot be told apart from it, and was read so before too), a run message starting "switched
-- to reasoning mode". Annotations are append-only (trigger annotations_no_update): the trigger
-- is lifted for this one fill and put back as it was. Applied once, never edited.

ALTER TABLE annotations ADD COLUMN c3_file_judge TEXT;
ALTER TABLE annotations ADD COLUMN c3_file_text TEXT;
ALTER TABLE judge_runs ADD COLUMN switched_to_reasoning INTEGER NOT NULL DEFAULT 0;

DROP TRIGGER annotations_no_update;

UPDATE annotations SET c3_file_judge = substr(note, length('in the C3 result files of judge ') + 1)
WHERE substr(note, 1, length('in the C3 result files of judge ')) = 'in the C3 result files of judge '
  AND action IN ('confirm', 'override', 'label') AND label IS NOT NULL;

CREATE TRIGGER annotations_no_update BEFORE UPDATE ON annotations
BEGIN
    SELECT RAISE(ABORT, 'annotations are append-only');
END;

UPDATE judge_runs SET switched_to_reasoning = 1
WHERE substr(message, 1, length('switched to reasoning mode')) = 'switched to reasoning mode';

CREATE INDEX labels_in_force_by_time ON labels_in_force (annotator, decided_at);
