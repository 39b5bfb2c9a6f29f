"""Protocol suites for testing a method against the papers' baselines (``faircl bench``).

- :mod:`faircl.bench.spec`: protocols as versioned YAML data, grouped into suites (``protocols/<suite>/*.yaml``);
- :mod:`faircl.bench.runner`: the runs (forked from a pre-imported worker; baselines cached and reused; resumable);
- :mod:`faircl.bench.results`: the verdicts (:mod:`faircl.eval.baseline`; the protocols' claims one family, --against's another) and the results files.
"""

from faircl.bench.spec import SUITES, Claim, Protocol, load_suite, suite_names

__all__ = ["SUITES", "Claim", "Protocol", "load_suite", "suite_names"]
