"""`python -m kcoord` is the `kcoord` command."""

from kcoord.coordinator.cli import main

raise SystemExit(main())
