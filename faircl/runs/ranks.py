"""The end of a multi-process command started by Lightning's launcher (``--trainer.strategy ddp``): rank 0 re-runs the
command for ranks 1..N-1 as child processes; this module makes the command end when all of them have ended.

After the last barrier (:func:`faircl.utils.end_distributed`) a rank has nothing left to contribute: rank 0 has the
gathered rows and writes the outputs. Its teardown (closing the process group, the interpreter's exit) should then
take milliseconds. :func:`end_ranks` bounds it, so that a rank stuck in teardown can neither keep the user's command
(or whatever reads its output) waiting nor linger as an orphan:

* a child rank that is still alive :data:`STACKS_AFTER_S` seconds after its barrier writes the stacks of its threads
  to stderr (where it is stuck: the evidence for a report);
* rank 0 waits up to :data:`GRACE_S` seconds for each child, then stops the ones still running and says which, on
  stderr (the exit status stays rank 0's).
"""

from __future__ import annotations

import faulthandler
import os
import subprocess
import sys
from typing import Any

__all__ = ["GRACE_S", "STACKS_AFTER_S", "end_ranks"]

#: how long rank 0 waits for a child rank after the command's work is done
GRACE_S = 60.0
#: when a child rank still alive after its last barrier writes where its threads are
STACKS_AFTER_S = 45.0


def end_ranks(trainer: Any | None) -> None:
    """Called by every process of a command whose work succeeded, after its process group is closed.

    A child rank (``LOCAL_RANK`` > 0) arms the stack dump; rank 0 waits for its children (see the module)."""
    if os.environ.get("LOCAL_RANK", "0") != "0":
        faulthandler.dump_traceback_later(STACKS_AFTER_S, exit=False, file=sys.__stderr__)
        return
    launcher = getattr(getattr(trainer, "strategy", None), "launcher", None)
    # Lightning's child-process observer (a thread of rank 0) watches this very list and stops rank 0 when a child
    # ends with a non-zero status: a child stopped here leaves the list first.
    procs: list[subprocess.Popen] = getattr(launcher, "procs", None) or []
    for rank, proc in enumerate(list(procs), start=1):
        try:
            proc.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            procs.remove(proc)
            proc.kill()
            proc.wait()
            print(f"faircl: rank {rank} (pid {proc.pid}) had finished its work but not exited {GRACE_S:.0f} s after "
                  "rank 0 ended the command: stopped it", file=sys.stderr, flush=True)
