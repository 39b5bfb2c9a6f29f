"""Imported last by a :class:`~faircl.cli.workers.RunPool`'s fork server, after its preload and warm-up: the server's
children start with Ctrl-C (SIGINT) ignored. A Ctrl-C reaches the whole process group, so without this a spare child
forked ahead (still starting, or waiting for its run) would die of it with a traceback on the user's console; its
owner handles the Ctrl-C and closes the pool instead. A child sets the default handler back when it gets its run."""

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)
