-- 0013_inspect: tasks whose id and label set come with imported data rather than a template
-- manifest. An Inspect AI log names its task (stored as inspect/<task>) and its scorer's values
-- give the labels (C/I letters, True/False, numbers, the scorer's own text); the template family
-- that serves such tasks lists none itself (templates/inspect/manifest.toml).

CREATE TABLE data_tasks (
    task TEXT NOT NULL,
    lang TEXT NOT NULL,
    family TEXT NOT NULL,               -- the template family serving the task (inspect)
    labels TEXT NOT NULL,               -- JSON list, in the kind's order (the positive outcome first)
    PRIMARY KEY (task, lang)
) WITHOUT ROWID;
