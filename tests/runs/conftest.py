"""The SLURM tests' cluster: :func:`faircl.runs.slurm.available` asked once per session (a controller that does not
answer costs its 5 s once), the tests that need it skipped with its reason."""

from __future__ import annotations

import pytest

from faircl.runs.slurm import available


@pytest.fixture(scope="session")
def slurm_cluster() -> None:
    """Skip, with the reason, unless a SLURM cluster answers (``.ci/slurm-up`` starts a one-node one)."""
    reason = available()
    if reason:
        pytest.skip(reason)
