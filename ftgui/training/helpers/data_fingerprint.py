"""Helper process: the content fingerprint of a dataset function's arrays, as JSON on stdout.

`python -m ftgui.training.helpers.data_fingerprint SOURCE TASK SEED` prints
`{"fingerprint": HEX}` (exit 0), or `{"error": LINE}` (exit 2) when the function fails. The
seeds are set as a trainer sets them before it loads the data (`keras.utils.set_random_seed`
seeds Python's `random` and NumPy's global generator), so the arrays are the trainer's.
Started by `ftgui.core.settings.user_code.check_start` before a fork moves any checkpoint: it
runs the user's code, so never in the GUI's process. TensorFlow is not imported here.
"""

from __future__ import annotations

import json
import random
import sys


def main(argv: list[str]) -> int:
    import numpy as np

    from ftgui.training import data as datamod

    source, task, seed = argv[0], argv[1], int(argv[2])
    random.seed(seed)
    np.random.seed(seed)
    try:
        fingerprint = datamod.load(source, task).info["fingerprint"]
    except Exception as exc:  # the user's function: any error is its answer
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}".splitlines()[0]}))
        return 2
    print(json.dumps({"fingerprint": fingerprint}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
