"""``python -m tfx.sweep experiments/NAME …``: see :func:`tfx.sweep.main`."""
import sys

from tfx.sweep import main

sys.exit(main())
