"""``python -m dpsample.cli``: the ``dpsample`` command."""

import sys

from dpsample.cli.entry import main

if __name__ == "__main__":  # importing the module (pkgutil walks) runs nothing
    sys.exit(main())
