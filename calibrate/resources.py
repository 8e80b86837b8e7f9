"""Finds the data folders that ship with calibrate (templates/, db/, the demo data).

In a wheel, templates/ and db/ are installed inside the package; in a source checkout or an
editable install they sit at the top of the repository. One lookup serves both.
"""

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def bundled(name: str) -> Path:
    """The folder `name` (templates, db, demo) as installed, or as checked out."""
    inside = PACKAGE_DIR / name
    if inside.is_dir():
        return inside
    return PACKAGE_DIR.parent / name
