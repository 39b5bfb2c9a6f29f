"""``python -m faircl.eval --ckpt CKPT --config CONFIG``: the finDML benchmark of a checkpoint (see
:mod:`faircl.eval.findml`)."""

from faircl.eval.findml import main

if __name__ == "__main__":
    main()
