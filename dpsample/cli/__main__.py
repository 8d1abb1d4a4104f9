"""``python -m dpsample.cli``: the ``dpsample`` command."""

import sys

from dpsample.cli.entry import main

sys.exit(main())
