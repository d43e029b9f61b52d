"""``python -m tiering_job --bootstrap-servers HOST:PORT [--once] [--interval 5s]``."""

import sys

from tiering_job.job import main

sys.exit(main())
