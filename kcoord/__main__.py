"""`python -m kcoord` is the `kcoord` command."""

from kcoord.wiring.cli import main

raise SystemExit(main())
