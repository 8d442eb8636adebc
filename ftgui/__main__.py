"""`python -m ftgui`: the same as the `ftgui` command."""

import sys

from ftgui.cli import main

sys.exit(main())
