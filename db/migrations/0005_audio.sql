-- 0005_audio: the spoken response behind an item's transcript, and whether the annotator heard it.
-- Applied once, never edited.

-- Where an import found its audio files; a path in item_audio is relative to its root, so the
-- database can move with its audio folder (`--audio-root DIR` looks elsewhere later).
CREATE TABLE audio_roots (
    id INTEGER PRIMARY KEY,
    root TEXT NOT NULL UNIQUE,          -- absolute folder, as it was at import
    imported_at TEXT NOT NULL
);

-- One row per audio clip of an item: 'response', or 'turn 1', 'turn 2'… for multi-turn dialogues.
-- A clip that was missing or unreadable at import keeps its expected path and the reason.
CREATE TABLE item_audio (
    item_id INTEGER NOT NULL REFERENCES items (id),
    part TEXT NOT NULL,
    position INTEGER NOT NULL,          -- order of the clips within the item
    root_id INTEGER NOT NULL REFERENCES audio_roots (id),
    path TEXT NOT NULL,                 -- relative to the root
    duration REAL,                      -- seconds
    sample_rate INTEGER,                -- Hz
    checksum TEXT,                      -- sha256 of the file's bytes
    problem TEXT,                       -- why there is no audio (NULL when the clip is usable)
    PRIMARY KEY (item_id, part)
) WITHOUT ROWID;

-- Listening recorded with each decision: how many times the annotator started the audio
-- while the item was shown, and for how many seconds it played (NULL: the item had no audio).
ALTER TABLE annotations ADD COLUMN audio_plays INTEGER;
ALTER TABLE annotations ADD COLUMN listened_seconds REAL;
