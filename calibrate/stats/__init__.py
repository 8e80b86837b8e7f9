"""calibrate's statistics: pure functions over arrays and counts, with their formulas and references.

Nothing here reads the store, a file format or the UI; callers pass numbers in and get
`calibrate.model.Estimate`-style records out.
"""
