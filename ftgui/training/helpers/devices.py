"""Helper process: print TensorFlow's physical devices as JSON (`-m
ftgui.training.helpers.devices`)."""

import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main() -> None:
    from ftgui.training.imports import import_tensorflow

    import_tensorflow()
    import tensorflow as tf

    devices = [{"name": d.name, "device_type": d.device_type}
               for d in tf.config.list_physical_devices()]
    print(json.dumps(devices))


if __name__ == "__main__":
    main()
