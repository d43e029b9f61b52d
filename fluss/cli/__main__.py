"""``python -m fluss.cli``: the ``fluss`` command."""

import sys

from fluss.cli import main

sys.exit(main())
