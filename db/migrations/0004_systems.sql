-- 0004_systems: the system under test (the model whose response is judged) and item versions.
-- An item's identity becomes (task, lang, system, source_id); importing changed content under
-- the same identity (with --update) adds a new version, and earlier labels stay attached to
-- the version they were made on. Items imported before this migration get system '' (none);
-- earlier duplicates of one (task, lang, source_id) become its versions 1, 2, ... in id order.

ALTER TABLE items ADD COLUMN system TEXT NOT NULL DEFAULT '';  -- '' for gold-only data
ALTER TABLE items ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE items ADD COLUMN current INTEGER NOT NULL DEFAULT 1;  -- 0 once a newer version exists

UPDATE items SET version = (
    SELECT count(*) FROM items o
    WHERE o.task = items.task AND o.lang = items.lang AND o.source_id = items.source_id AND o.id <= items.id
);
UPDATE items SET current = 0 WHERE EXISTS (
    SELECT 1 FROM items o
    WHERE o.task = items.task AND o.lang = items.lang AND o.source_id = items.source_id AND o.id > items.id
);

CREATE UNIQUE INDEX items_identity ON items (task, lang, system, source_id, version);
CREATE INDEX items_by_cell ON items (task, lang, system) WHERE current = 1;
