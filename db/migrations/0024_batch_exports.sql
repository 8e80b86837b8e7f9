-- 0024_batch_exports: what each `judge --export-batch` wrote, request by request, so that
-- `judge --import-batch` can say which requests of the batch came back with no result (the
-- Batch API writes failed requests to a separate error file; a result file may be cut short).
-- A request is judged once a judgment of its item, judge key and sample newer than
-- `judged_after` (the newest judgment id when the batch was written) is stored. Item ids are not
-- references: an abandoned import may remove an item a batch asked about. Applied once, never edited.

CREATE TABLE batch_exports (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,                 -- the request file written, as given
    judge_name TEXT NOT NULL,
    exported_at TEXT NOT NULL,
    judged_after INTEGER NOT NULL       -- the newest judgment id when the batch was written
);

CREATE TABLE batch_requests (
    export_id INTEGER NOT NULL REFERENCES batch_exports (id),
    custom_id TEXT NOT NULL,
    item_id INTEGER NOT NULL,
    judge_key TEXT NOT NULL,
    sample INTEGER NOT NULL,
    PRIMARY KEY (export_id, custom_id)
);

CREATE INDEX batch_requests_by_custom_id ON batch_requests (custom_id);
