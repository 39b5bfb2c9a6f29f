"""A run, once, below every command: what ``faircl fit``/``test``, ``faircl sweep`` and ``faircl bench`` start.

- :mod:`faircl.runs.engine`: one fit-then-test in this process, returning its record;
- :mod:`faircl.runs.folders`: the run folder, written and read in one place (the record ``run.json``, the test's
  report and rows as a :class:`~faircl.eval.tradeoff.Run`);
- :mod:`faircl.runs.history`: the validation metrics of every epoch;
- :mod:`faircl.runs.executors`: where runs run: forked from a pre-imported worker (:mod:`faircl.runs.pool`), as fresh
  processes, or as a SLURM job array (:mod:`faircl.runs.slurm`);
- :mod:`faircl.runs.lightning_cli`: the LightningCLI that builds a run from a command line or a config;
- :mod:`faircl.runs.user_error`: the user's error and its one-line message (exit status 2).
"""
