-- 0026_judge_run_process: the process of each judge run (host and process id), so that a run
-- that was not recorded as ended shows as running while its process runs and as died once it is
-- gone from this machine. Runs recorded before have neither: whether they run cannot be told.
-- (A run's counts are written as each of its judgments is stored, in the same transaction, so
-- they are true of a run that goes on or died.) Applied once, never edited.
ALTER TABLE judge_runs ADD COLUMN host TEXT;
ALTER TABLE judge_runs ADD COLUMN pid INTEGER;
