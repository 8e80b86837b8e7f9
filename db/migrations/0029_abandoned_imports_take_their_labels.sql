-- 0029_abandoned_imports_take_their_labels: an import that is abandoned (killed, failed, or
-- `calibrate import abandon RUN`) removes the labels it wrote along with its items.
--
-- Annotations are append-only (trigger annotations_no_delete, which this migration replaces
-- with annotations_kept_unless_import_abandoned), and an import that brings labels
-- (C3 result files' generation decisions, people's edits in an Inspect log) writes them with
-- each batch of its new, hidden items. Until now the clean-up of such an
-- import could not delete those items (their annotations reference them: FOREIGN KEY constraint
-- failed), so the run stayed, and every later import stopped on it.
--
-- Now an annotation may be deleted when its item belongs to an import run that is unfinished
-- and has been taken from its writer (owner NULL): that is, only by the clean-up of an abandoned
-- import. Such an item was never shown to anyone (hidden items are in no queue, report, export
-- or merge), so the only labels it has are the ones its own import wrote. Every other
-- annotation stays append-only. The new trigger has a name of its own, so that this migration
-- run again on a database that has it fails as every other does ("already exists"), which
-- tells a damaged record of the migrations. Applied once, never edited.

DROP TRIGGER IF EXISTS annotations_no_delete;

CREATE TRIGGER annotations_kept_unless_import_abandoned BEFORE DELETE ON annotations
WHEN NOT EXISTS (SELECT 1 FROM items i JOIN import_runs r ON r.id = i.import_run
                 WHERE i.id = old.item_id AND r.finished_at IS NULL AND r.owner IS NULL)
BEGIN
    SELECT RAISE(ABORT, 'annotations are append-only');
END;
