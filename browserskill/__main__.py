import sys

from browserskill.cli.main import main

sys.exit(main())
