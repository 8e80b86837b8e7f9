-- 0022_stratified_orders: the stratified annotation queue of a filter and seed as a session
-- worked it out (every cell's ids shuffled, the cells interleaved), kept so that the next
-- session of the same items starts without reading every item id and shuffling it. No trigger
-- keeps it: `items_stamp` names the items it was worked out from (the highest item id and the
-- import runs), and a session uses it only while the stamp is the database's.
-- Applied once, never edited.

CREATE TABLE stratified_orders (
    scope TEXT NOT NULL,        -- the session's filter: JSON [task, lang, system], null for any
    seed INTEGER NOT NULL,
    items_stamp TEXT NOT NULL,
    ids BLOB NOT NULL,          -- the queue's item ids in order, 8 bytes each, little-endian
    made_at TEXT NOT NULL,
    PRIMARY KEY (scope, seed)
) WITHOUT ROWID;
