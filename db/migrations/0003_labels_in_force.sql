-- 0003_labels_in_force: the label each annotator has in force on each item, kept as data.
-- The store updates it in the same transaction as every appended annotation. The label in
-- force is the annotator's latest label decision that no undo has reverted, "latest" in an
-- order that survives merging databases: decision time (created_at), ties broken by uid —
-- never the local row id. An undo names the decision it reverts (reverts_id), so an offline
-- undo reverts that decision only, and an older offline label never replaces a newer one.

CREATE TABLE labels_in_force (
    item_id INTEGER NOT NULL REFERENCES items (id),
    annotator TEXT NOT NULL,
    label TEXT NOT NULL,
    action TEXT NOT NULL,               -- confirm | override | label: how the deciding row labelled
    judgment_id INTEGER REFERENCES judgments (id),
    annotation_uid TEXT NOT NULL,       -- the deciding annotation
    decided_at TEXT NOT NULL,           -- its created_at
    PRIMARY KEY (item_id, annotator)
) WITHOUT ROWID;
CREATE INDEX labels_in_force_by_annotator ON labels_in_force (annotator, item_id);

INSERT INTO labels_in_force (item_id, annotator, label, action, judgment_id, annotation_uid, decided_at)
SELECT item_id, annotator, label, action, judgment_id, uid, created_at
FROM (
    SELECT a.item_id, a.annotator, a.label, a.action, a.judgment_id, a.uid, a.created_at,
           row_number() OVER (PARTITION BY a.item_id, a.annotator ORDER BY a.created_at DESC, a.uid DESC) AS recency
    FROM annotations a
    WHERE a.action IN ('confirm', 'override', 'label') AND a.label IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM annotations u WHERE u.reverts_id = a.id)
)
WHERE recency = 1;

DROP VIEW current_labels;

CREATE VIEW current_labels AS
SELECT item_id, annotator, label, action, judgment_id, decided_at AS created_at
FROM labels_in_force;
