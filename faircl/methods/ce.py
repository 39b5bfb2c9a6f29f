"""Cross-entropy baseline: encoder + classifier, no mitigation."""

from __future__ import annotations

from faircl.methods.base import FairModule


class CE(FairModule):
    """Plain cross-entropy training (the unmitigated baseline every fairness method is compared with).

    All arguments are those of :class:`~faircl.methods.base.FairModule`.
    """
