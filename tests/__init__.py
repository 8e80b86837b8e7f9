"""calibrate's tests. Imported before anything of calibrate's: the environment's $COLUMNS and
$LINES are dropped here, since the commands fold their prose to $COLUMNS, decided when
`calibrate.cli` is imported, and a test's expected text is one line. (Under `-n 2` the workers
started with COLUMNS=80 and LINES=24 in their environment, where one pytest process had
neither.) A test that wants a width sets it."""

import os

for name in ("COLUMNS", "LINES"):
    os.environ.pop(name, None)
