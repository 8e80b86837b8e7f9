"""calibrate's tests. Imported before anything of calibrate's: the environment's $COLUMNS and
$LINES are dropped here (pytest-xdist's workers have 80 x 24), since the commands fold their
prose to $COLUMNS, decided when `calibrate.cli` is imported; a test that wants a width sets it."""

import os

for name in ("COLUMNS", "LINES"):
    os.environ.pop(name, None)
