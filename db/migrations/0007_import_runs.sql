-- 0007_import_runs: an import is a recorded run, written in short transactions. Items it adds
-- carry its id and stay hidden from every reader until the run is finished, so a long import
-- never holds the write lock for long, yet a failed or killed import leaves nothing visible
-- (the next import removes what a dead run wrote).

CREATE TABLE import_runs (
    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL,               -- what was imported (the command and file)
    pid INTEGER NOT NULL,               -- the importing process, to tell a dead run from a running one
    host TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT                    -- NULL while running: its items are hidden
);
CREATE INDEX import_runs_unfinished ON import_runs (id) WHERE finished_at IS NULL;

ALTER TABLE items ADD COLUMN import_run INTEGER REFERENCES import_runs (id);
CREATE INDEX items_by_import_run ON items (import_run) WHERE import_run IS NOT NULL;
