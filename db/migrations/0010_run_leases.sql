-- 0010_run_leases: leases that tell a running import or judge run from a dead one on any host.
-- Applied once, never edited.
--
-- An import renews its run's heartbeat while it reads and writes; a run whose heartbeat has
-- stopped (60 s) is dead even when its process id now belongs to another process or it ran on
-- another host, and the next import removes what it wrote. Unfinished runs recorded before this
-- migration get the migration time as their heartbeat: if dead, they are removed a minute later.
ALTER TABLE import_runs ADD COLUMN heartbeat_at REAL;  -- unix seconds of the last renewal
ALTER TABLE import_runs ADD COLUMN owner TEXT;  -- a random tag of the writing process: run ids can be reused
UPDATE import_runs SET heartbeat_at = CAST(strftime('%s', 'now') AS REAL) WHERE finished_at IS NULL;

-- A judge run claims each (item, judge configuration, sample) before asking the server and
-- releases it once the answer is stored, so concurrent runs of one judge split the items and
-- ask each once. A claim expires (a killed run's claims come free), and a claim whose process
-- is gone from this host is free at once.
CREATE TABLE judge_claims (
    item_id INTEGER NOT NULL REFERENCES items (id),
    judge_key TEXT NOT NULL,
    sample INTEGER NOT NULL,
    holder TEXT NOT NULL,               -- the judge run: host, process id and a random tag
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    expires_at REAL NOT NULL,           -- unix seconds
    PRIMARY KEY (item_id, judge_key, sample)
) WITHOUT ROWID;
