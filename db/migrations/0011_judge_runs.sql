-- 0011_judge_runs: each `calibrate judge` run against a server is recorded: what it set out to
-- ask, what it stored, every request it sent (retries included) and why attempts failed, the
-- lowest its adaptive concurrency went, and how it ended. `calibrate status` shows them, so
-- timeouts and retries are never silent.

CREATE TABLE judge_runs (
    id INTEGER PRIMARY KEY,
    judge_name TEXT NOT NULL,
    model TEXT NOT NULL,                -- the model asked for
    server TEXT NOT NULL,               -- host:port
    params TEXT NOT NULL,               -- JSON: the request parameters, as in the judgments (mode switches included)
    started_at TEXT NOT NULL,
    finished_at TEXT,                   -- NULL while the run goes on (or if its process died)
    outcome TEXT CHECK (outcome IN ('finished', 'stopped', 'refused', 'interrupted')),
    message TEXT,                       -- why a stopped or refused run stopped
    items INTEGER NOT NULL,             -- items and samples (repeats) the run set out to ask
    samples INTEGER NOT NULL,
    stored INTEGER NOT NULL DEFAULT 0,  -- judgments stored, and of them:
    verdicts INTEGER NOT NULL DEFAULT 0,
    bare INTEGER NOT NULL DEFAULT 0,    -- verdicts given as the bare word
    unparsed INTEGER NOT NULL DEFAULT 0,
    truncated INTEGER NOT NULL DEFAULT 0, -- unparsed outputs cut at the token limit
    errors INTEGER NOT NULL DEFAULT 0,
    requests INTEGER NOT NULL DEFAULT 0, -- attempts sent, retries included
    retries INTEGER NOT NULL DEFAULT 0,
    failures TEXT NOT NULL DEFAULT '{}', -- JSON: failed attempts by cause ("timeout", "HTTP 429", ...) -> n
    concurrency INTEGER NOT NULL,       -- the ceiling asked for
    concurrency_lowest INTEGER          -- the lowest the adaptive limit went
);
