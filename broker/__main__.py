"""``python -m broker ...`` is the ``hourglass`` command."""
from hourglass.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
