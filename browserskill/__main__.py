import sys

from browserskill.cli.fast import main

sys.exit(main())
