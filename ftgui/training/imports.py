"""TensorFlow and Keras imported once per process, for the least CPU.

Every trainer, standby and helper process pays for `import tensorflow, keras` (3-6 s of CPU on
this project's 2-core machine), and the test suite starts about 300 of them
(`benchmarks/suite_cpu.py`). `benchmarks/bench_import.py` measures what this module saves.
"""

from __future__ import annotations

import gc
import sys


def import_tensorflow() -> None:
    """Import TensorFlow and Keras (TensorFlow 2.21 imports Keras 3 itself when it is installed)
    with Python's cyclic garbage collector paused, then move every object alive after the
    import into the collector's permanent generation (`gc.freeze`). Does nothing once both are
    imported; leaves the collector enabled or disabled as it found it; raises what the imports
    raise.

    Why: the import allocates millions of objects, so the collector runs hundreds of times
    during it and every run of its oldest generation walks the whole heap built so far
    (0.5-0.6 s of a 3.6-4.5 s import measured here with `gc.callbacks`). Almost nothing the
    import makes is garbage, so pausing loses no memory worth having. Frozen objects are
    ignored by all later collections (CPython's documentation of `gc.freeze`), so the
    collector does not walk TensorFlow's modules again while the process trains.
    """
    if "tensorflow" in sys.modules and "keras" in sys.modules:
        return
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        import keras  # noqa: F401
        import tensorflow  # noqa: F401
    finally:
        if was_enabled:
            gc.enable()
    gc.freeze()


def import_trainer_modules() -> None:
    """Import the trainer's own modules that a standby or the fork server imports before any
    order (assembly, data, models, strategies, the warm standby) and the TensorBoard protos
    that the loop's `Summaries` imports (~0.1 s), so that the order does not."""
    from ftgui.core.record import events  # noqa: F401
    from ftgui.core.settings import config  # noqa: F401
    from ftgui.training import (  # noqa: F401
        assemble,
        data,
        models,
        parameter_server,
        strategies,
        warm_standby,
    )

    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2  # noqa: F401
    except ImportError:
        pass
