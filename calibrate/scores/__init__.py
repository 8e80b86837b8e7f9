"""The benchmark's scores per system under test, raw and corrected for the judge's errors
(`calibrate scores`).

A judge's accuracy figure for a system is what a benchmark publishes; it is biased by the
judge's mistakes. Per system × task × language (and per system overall) this package puts side
by side: the judge's accuracy three ways (C3's own scoring rule, counted as C3's
process_results.py counts it; calibrate's parser with unparsed verdicts counted wrong, and
with them left out), people's accuracy on the items they
labelled, and the corrected accuracy from both (PPI++ as the main estimate, Rogan–Gladen
beside it; the statistics live in calibrate.stats.correction). For C3 the final score is the mean
over the judges, raw and corrected. Systems are ranked with the interval of every pairwise
difference; judges are compared with each other (Cohen's κ) and with people (the paired
difference of their agreement with people); and each cell says how many more random labels
would bring its corrected interval under the target half-width.

Right and wrong: for a yes/no kind a verdict or label is "right" when it means yes (C3:
the system's answer is correct), for ReCoRD when it is "correct"; for a label-set kind
(SuperGLUE) when it equals the item's reference (the gold label): the verdict is the system's
answer as parsed, a person's label their reading of it. An item of those two kinds without a
gold label (a test split's) is neither right nor wrong: left out of every accuracy and counted
(`ScoreCell.no_gold`). Items with several annotators use the majority label (a tie
counts as unlabelled, and each cell counts its ties). A corrected or raw figure over a row
pooling cells needs the judge's verdicts in every cell of its benchmarks there, else it is
withheld, naming the cells; an unparsed verdict counts as not right in the corrected figures
(a fixed reading the labels measure the judge's errors under), and is left out where two judges
are compared. Score kinds (the rubric) have no right/wrong and are left out. Tasks
without a judge prompt (C3's generation phenomena) are decided by people: as in C3's own
statistics, they count in the accuracy of every judge of their benchmark and system by the
human label, and as wrong while unlabelled (in C3's rule, by the decision the judge's own result
files held, where they were imported: `formats.c3.c3_file_decisions`). No column counts a
verdict on an item C3's evaluate.py passes over (`formats.c3.c3_passed_over`). They are never judge evidence: a judgment stored
on such an item is ignored, and the corrected accuracy, Rogan–Gladen and the labels needed
are computed over the items the judge judged.

`model` holds the figures, `build` computes them from the store, `render` writes them (terminal
table, Markdown, JSON, CSV, HTML). Import from those modules: this package imports none of them,
so the C3 format can read the model while the building reads the C3 format.
"""
