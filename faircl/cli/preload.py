"""What a worker imports once before it forks runs (:mod:`faircl.cli.workers`): the command and everything a fit and
a test import on first use (the leakage probes' scikit-learn, the report's matplotlib, rich and pandas, the digits of
ColoredDigits from ``sklearn.datasets``), so that a forked run imports nothing. Importing this module runs no torch
code (no thread pool is started before a fork)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot  # noqa: E402,F401
import pandas  # noqa: E402,F401
import rich.console  # noqa: E402,F401
import rich.table  # noqa: E402,F401
import sklearn.datasets  # noqa: E402,F401
import sklearn.datasets.data  # noqa: E402,F401  (the packages load_digits reads its files from)
import sklearn.datasets.descr  # noqa: E402,F401
import sklearn.linear_model  # noqa: E402,F401
import sklearn.pipeline  # noqa: E402,F401
import sklearn.preprocessing  # noqa: E402,F401
import sklearn.svm  # noqa: E402,F401

import faircl.cli.app  # noqa: E402,F401
import faircl.cli.trial  # noqa: E402,F401
import faircl.eval.report_plot  # noqa: E402,F401
