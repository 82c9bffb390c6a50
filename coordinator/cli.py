"""The `kcoord` command line. The server itself lands with the coordinator issue."""

import sys


def main(argv: list[str] | None = None) -> int:
    print("kcoord: the coordinator server is not built yet (see the coordinator issue)", file=sys.stderr)
    return 1
