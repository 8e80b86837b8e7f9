-- 0009_cleanup_indexes: an index on every foreign key column that lacked one. Deleting a
-- judgment (the clean-up of an abandoned import run) makes SQLite look for rows that still
-- reference it in annotations, labels_in_force and verdicts_in_force; without an index each
-- look-up reads the whole table, so removing n judgments cost n full scans.
-- Applied once, never edited.

CREATE INDEX verdicts_in_force_by_judgment ON verdicts_in_force (judgment_id);
CREATE INDEX labels_in_force_by_judgment ON labels_in_force (judgment_id) WHERE judgment_id IS NOT NULL;
CREATE INDEX annotations_by_judgment ON annotations (judgment_id) WHERE judgment_id IS NOT NULL;
CREATE INDEX item_audio_by_root ON item_audio (root_id);
