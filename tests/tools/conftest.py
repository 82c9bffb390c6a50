"""The integration fixtures (a real `kcoord serve`, consumer workers, producers) for the tools' tests."""

from tests.integration.conftest import (  # noqa: F401  (fixtures and the report hook are used by name)
    producers,
    pytest_runtest_makereport,
    server,
    topic,
    topic_partitions,
    workers,
)
