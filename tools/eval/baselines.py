"""The design's baselines on the features truffld-diagnose exports (--export-features x.csv).

Each sample is one operator family in one step and view, summarised from its instances (mean,
max and min of every exported feature after a signed log1p, plus the instance count), then
z-scored per (view, family) with training-split statistics ("per-scope standardisation").
Steps are split 50/25/25 into train/validation/test by a hash of (scenario, rank, step_index),
so every method, truffld included, is scored on the same held-out steps.
  unsupervised: KMeans (distance to nearest centroid), DBSCAN on PCA (noise = anomaly),
                Isolation Forest, GMM (negative log-likelihood, K and covariance by BIC)
  supervised:   SVM (linear / RBF, decision value), Random Forest (balanced class weights)
Hyper-parameters come from the design's grids (trimmed under --quick); each method's
configuration and score threshold maximise operator-level F1 on the validation split (a fixed
random subset of at most 30,000 samples, 10,000 under --quick; models fit on at most 12,000
training samples, 4,000 for SVM and DBSCAN, 3,000 under --quick). A family
is predicted faulty when its score passes the threshold; a step is abnormal when any family is.
Uses scikit-learn from Debian's python3-sklearn: run with /usr/bin/python3.
"""
import os
import sys
import time
import zlib
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def split_of(scenario, rank, step):
    h = zlib.crc32(f"{scenario}|{rank}|{step}".encode()) % 100
    return "train" if h < 50 else ("val" if h < 75 else "test")


def _aggregate(path, scenario, feat_names):
    """One feature export -> [(key, view, family, vector, step_abnormal, family_faulty)], one per
    (rank, step, view, family): mean, max and min of each feature after a signed log1p, plus
    log1p of the instance count. Returns (rows, feature names)."""
    names, raw = common.read_features(path)
    if feat_names is not None and names != feat_names:
        raise ValueError(f"{path}: feature columns {names} differ from {feat_names}; "
                         "re-export all scenarios with the same truffld-diagnose")
    index, meta, gid, vals = {}, [], [], []
    for rank, step, view, fam, ab, ff, v in raw:
        key = (rank, step, view, fam)
        g = index.get(key)
        if g is None:
            g = index[key] = len(meta)
            meta.append((key, ab, ff))
        gid.append(g)
        vals.append(v)
    if not meta:
        return [], names
    a = np.asarray(vals, dtype=float)
    a = np.sign(a) * np.log1p(np.abs(a))
    gid = np.asarray(gid)
    n, d = len(meta), a.shape[1]
    cnt = np.bincount(gid, minlength=n).astype(float)
    mean = np.zeros((n, d))
    np.add.at(mean, gid, a)
    mean /= cnt[:, None]
    mx = np.full((n, d), -np.inf)
    np.maximum.at(mx, gid, a)
    mn = np.full((n, d), np.inf)
    np.minimum.at(mn, gid, a)
    X = np.hstack([mean, mx, mn, np.log1p(cnt)[:, None]])
    rows = [((scenario, k[0], k[1]), k[2], k[3], X[i], ab, ff) for i, (k, ab, ff) in enumerate(meta)]
    return rows, names


def load_samples(feature_files):
    """feature_files: [(scenario, csv path)] -> per view: keys, families, X, y, split, step truth."""
    feat_names = None
    views = defaultdict(lambda: {"keys": [], "fam": [], "X": [], "y": [], "step_y": [], "split": []})
    for scenario, path in feature_files:
        rows, feat_names = _aggregate(path, scenario, feat_names)
        for key, view, fam, vec, ab, ff in rows:
            v = views[view]
            v["keys"].append(key)
            v["fam"].append(fam)
            v["X"].append(vec)
            v["y"].append(ff)
            v["step_y"].append(ab)
            v["split"].append(split_of(*key))
    out = {}
    for view, v in views.items():
        X = np.asarray(v["X"])
        split = np.asarray(v["split"])
        fam = np.asarray(v["fam"])
        tr = split == "train"
        for f in np.unique(fam):  # per-scope standardisation with training statistics
            m = fam == f
            ref = X[m & tr] if (m & tr).sum() >= 2 else X[m]
            mu, sd = ref.mean(0), ref.std(0)
            sd[sd < 1e-9] = 1.0
            X[m] = (X[m] - mu) / sd
        X = np.nan_to_num(X)
        out[view] = {"keys": v["keys"], "fam": list(fam), "X": X, "y": np.asarray(v["y"]),
                     "step_y": np.asarray(v["step_y"]), "split": split}
    return out


def best_threshold(scores, y):
    """Threshold maximising F1 of (score >= t) against y."""
    order = np.argsort(-scores)
    s, yy = scores[order], y[order]
    tp = np.cumsum(yy)
    fp = np.cumsum(1 - yy)
    fn = yy.sum() - tp
    f1 = 2 * tp / np.maximum(2 * tp + fp + fn, 1)
    i = int(np.argmax(f1))
    return float(s[i]), float(f1[i])


def _f1(pred, y):
    tp = int((pred & (y == 1)).sum())
    fp = int((pred & (y == 0)).sum())
    fn = int(((~pred) & (y == 1)).sum())
    return 2 * tp / max(2 * tp + fp + fn, 1)


def _subsample(idx, n, rng):
    return idx if len(idx) <= n else rng.choice(idx, n, replace=False)


def candidates(quick):
    from sklearn.cluster import KMeans, DBSCAN
    from sklearn.decomposition import PCA
    from sklearn.ensemble import IsolationForest, RandomForestClassifier
    from sklearn.mixture import GaussianMixture
    from sklearn.neighbors import NearestNeighbors
    from sklearn.svm import SVC, LinearSVC

    def kmeans(k):
        def fit(X, y):
            m = KMeans(n_clusters=k, n_init=4, random_state=0).fit(X)
            return lambda Z: m.transform(Z).min(1)
        return fit

    def dbscan(eps, mp, d):
        def fit(X, y):
            p = PCA(n_components=min(d, X.shape[1]), random_state=0).fit(X)
            Xp = p.transform(X)
            db = DBSCAN(eps=eps, min_samples=mp).fit(Xp)
            core = Xp[db.core_sample_indices_] if len(db.core_sample_indices_) else Xp[:1]
            nn = NearestNeighbors(n_neighbors=1).fit(core)
            return lambda Z: (nn.kneighbors(p.transform(Z))[0][:, 0] > eps).astype(float)
        return fit

    def iforest(n, psi):
        def fit(X, y):
            m = IsolationForest(n_estimators=n, max_samples=min(psi, len(X)), random_state=0).fit(X)
            return lambda Z: -m.score_samples(Z)
        return fit

    def gmm(X, y):
        best = None
        for k in ([2, 4] if quick else [2, 3, 4]):
            for cov in ("diag", "full"):
                m = GaussianMixture(n_components=k, covariance_type=cov, random_state=0, reg_covar=1e-3).fit(X)
                b = m.bic(X)
                if best is None or b < best[0]:
                    best = (b, m)
        m = best[1]
        return lambda Z: -m.score_samples(Z)

    def svm(kind, c, g):
        def fit(X, y):
            if len(np.unique(y)) < 2:
                return lambda Z: np.zeros(len(Z))
            if kind == "linear":
                m = LinearSVC(C=c, class_weight="balanced", dual=False, max_iter=5000).fit(X, y)
            else:
                m = SVC(C=c, kernel="rbf", gamma=g / X.shape[1], class_weight="balanced").fit(X, y)
            return m.decision_function
        return fit

    def rf(n, depth, leaf):
        def fit(X, y):
            if len(np.unique(y)) < 2:
                return lambda Z: np.zeros(len(Z))
            m = RandomForestClassifier(n_estimators=n, max_depth=depth, min_samples_leaf=leaf,
                                       class_weight="balanced", random_state=0, n_jobs=1).fit(X, y)
            return lambda Z: m.predict_proba(Z)[:, 1]
        return fit

    ks = [2, 3, 4, 5]
    db = [(0.5, 10, 8)] if quick else [(e, m, d) for e in (0.3, 0.5, 0.7) for m in (5, 10, 20) for d in (8, 16, 32)]
    ifs = [(100, 256)] if quick else [(n, p) for n in (100, 200) for p in (256, 512, 1024)]
    svms = [("linear", 1, 1), ("rbf", 1, 1)] if quick else \
        [("linear", c, 1) for c in (0.1, 1, 10)] + [("rbf", c, g) for c in (0.1, 1, 10) for g in (1, 2, 4)]
    rfs = [(100, 10, 2)] if quick else [(n, d, l) for n in (200, 400) for d in (10, 20, None) for l in (1, 2, 4)]
    return {
        "KMeans": (False, [(f"K={k}", kmeans(k)) for k in ks]),
        "DBSCAN": (False, [(f"eps={e},minPts={m},pca={d}", dbscan(e, m, d)) for e, m, d in db]),
        "IsolationForest": (False, [(f"n={n},psi={p}", iforest(n, p)) for n, p in ifs]),
        "GMM": (False, [("BIC", gmm)]),
        "SVM": (True, [(f"{k},C={c},g={g}/d", svm(k, c, g)) for k, c, g in svms]),
        "RandomForest": (True, [(f"n={n},depth={d},leaf={l}", rf(n, d, l)) for n, d, l in rfs]),
    }


def run_baselines(data, quick=False, log=print):
    """data: load_samples() output. Returns {method: {view: (pred {key: set}, chosen config)}}."""
    rng = np.random.default_rng(0)
    results = defaultdict(dict)
    max_train = 3000 if quick else 12000
    max_val = 10000 if quick else 30000  # configurations and thresholds are chosen on this many
    for view, d in data.items():
        X, y, split = d["X"], d["y"], d["split"]
        tr = np.where(split == "train")[0]
        va = _subsample(np.where(split == "val")[0], max_val, rng)
        te = np.where(split == "test")[0]
        for name, (supervised, grid) in candidates(quick).items():
            t0 = time.time()
            cap = min(max_train, 4000) if name in ("SVM", "DBSCAN") else max_train
            fit_idx = _subsample(tr, cap, rng)
            best = None
            for cfg, fit in grid:
                try:
                    score = fit(X[fit_idx], y[fit_idx])
                    sv = score(X[va])
                except Exception as e:  # a configuration that cannot fit this data is skipped
                    log(f"  {name} {cfg} ({view}): skipped: {e}")
                    continue
                if name == "DBSCAN":
                    t, f1 = 0.5, _f1(sv >= 0.5, y[va])
                else:
                    t, f1 = best_threshold(sv, y[va])
                if best is None or f1 > best[0]:
                    best = (f1, cfg, score, t)
            if best is None:
                continue
            _, cfg, score, t = best
            st = score(X[te]) >= t
            pred = defaultdict(set)
            for i, flag in zip(te, st):
                pred[d["keys"][i]]  # every test step appears, even with nothing predicted
                if flag:
                    pred[d["keys"][i]].add(d["fam"][i])
            results[name][view] = (dict(pred), cfg)
            log(f"  {name:16s} {view:10s} config {cfg}, threshold {t:.4g}, val F1 {best[0]:.3f} "
                f"({len(grid)} configurations, {time.time() - t0:.0f} s)")
    return results
