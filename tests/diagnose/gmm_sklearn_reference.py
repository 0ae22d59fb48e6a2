#!/usr/bin/python3
"""Reference values for truffld's EM: scikit-learn's GaussianMixture on fixed data and a fixed start.

Usage: /usr/bin/python3 gmm_sklearn_reference.py OUT.json
Writes, per case, the data, the starting parameters, and what scikit-learn computes after exactly
`iterations` EM iterations (tol=0): weights, means, covariances, per-sample log-likelihoods and
responsibilities. tests/diagnose/unit/gmm_sklearn_test.cc runs this and compares.
"""
import json
import sys
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture


def make_case(name, cov_type, k, d, n, iterations, seed, reg):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 4, size=(k, d))
    labels = rng.integers(0, k, size=n)
    x = centers[labels] + rng.normal(0, 1, size=(n, d)) * rng.uniform(0.5, 1.5, size=d)
    if cov_type == "full" and d > 1:  # correlated dims exercise the full covariance path
        x[:, 1] += 0.6 * x[:, 0]
    # Deliberately rough start: random samples as means, unit covariances, uniform weights.
    means0 = x[rng.choice(n, size=k, replace=False)] + 0.5
    weights0 = np.full(k, 1.0 / k)
    covs0 = np.stack([np.eye(d) * (1.0 + 0.3 * j) for j in range(k)])
    if cov_type == "diag":
        precisions0 = np.stack([1.0 / np.diag(c) for c in covs0])
    else:
        precisions0 = np.stack([np.linalg.inv(c) for c in covs0])
    gm = GaussianMixture(n_components=k, covariance_type=cov_type, reg_covar=reg, tol=0.0,
                         max_iter=iterations, n_init=1, weights_init=weights0, means_init=means0,
                         precisions_init=precisions0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gm.fit(x)
    covs = gm.covariances_  # (k, d) variances for diag, (k, d, d) for full
    return {
        "name": name, "covariance": cov_type, "k": k, "iterations": iterations, "reg_covar": reg,
        "x": x.tolist(), "weights0": weights0.tolist(), "means0": means0.tolist(),
        "covs0": covs0.tolist(), "weights": gm.weights_.tolist(), "means": gm.means_.tolist(),
        "covs": covs.tolist(), "log_prob": gm.score_samples(x).tolist(),
        "resp": gm.predict_proba(x).tolist(), "lower_bound": float(gm.lower_bound_),
    }


def main():
    cases = [
        make_case("diag_k2_d3", "diag", 2, 3, 300, 25, 11, 1e-3),
        make_case("full_k3_d2", "full", 3, 2, 400, 30, 12, 1e-3),
        make_case("full_k2_d4", "full", 2, 4, 250, 15, 13, 1e-2),
        make_case("diag_k4_d2", "diag", 4, 2, 500, 40, 14, 1e-6),
    ]
    with open(sys.argv[1], "w") as f:
        json.dump(cases, f)


if __name__ == "__main__":
    main()
