"""Coverage of a row's corrected interval with items people decide, some unlabelled (the
`decided` stratum of pooled_stratified_mean). One judged cell, N = 400 at accuracy .8, judge
Se .9 / Sp .7, random labels; 100 generation items right at .75, the first u unlabelled (the
labelled ones a random sample of them: which ones are unlabelled is random). 2000 trials each.

Measured (one run, 2026-11-29): coverage 0.930-0.967 over u {0, 5, 20, 60} x labels {20, 40,
100}; the mean width grows with u only a little (0.221 -> 0.228 at 20 labels, 0.089 -> 0.099 at
100), the labelled generation items telling the rest. Counting the unlabelled ones wrong with no
width instead covered the row's accuracy 71 % at u = 20 and 100 labels."""
import numpy as np

from calibrate.stats.pooled_correction import pooled_stratified_mean

for u in (0, 5, 20, 60):
    for n_labels in (20, 40, 100):
        rng = np.random.default_rng(99 + n_labels + u)
        hit = given = 0
        widths = []
        for _ in range(2000):
            y = (rng.random(400) < 0.8).astype(float)
            f = np.where(y == 1, rng.random(400) < 0.9, rng.random(400) >= 0.7).astype(float)
            labels = np.full(400, np.nan)
            picked = rng.choice(400, n_labels, replace=False)
            labels[picked] = y[picked]
            gen = rng.random(100) < 0.75
            est = pooled_stratified_mean(f, labels, np.zeros(400, int), ["c"], random_sample=True,
                                         decided=(100 - u, int(gen[u:].sum()), u))
            if est.value is None:
                continue
            given += 1
            real = (y.sum() + gen.sum()) / 500
            hit += est.ci[0] <= real <= est.ci[1]
            widths.append(est.ci[1] - est.ci[0])
        print(f"unlabelled {u:3d}/100, labels {n_labels:3d}: given {given}; covers the row's accuracy "
              f"{hit / given:.3f}; mean width {np.mean(widths):.3f}", flush=True)
