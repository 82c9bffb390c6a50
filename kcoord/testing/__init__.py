"""kcoord for tests: a pytest plugin with kcoord in the test process (`kcoord.testing.plugin`, loaded
by pytest through the `pytest11` entry point) and a testcontainers module
(`kcoord.testing.containers.KcoordContainer`).

Nothing here is imported at plugin load beyond what pytest needs: the server is imported when a
fixture first asks for it, so installing kcoord costs unrelated test runs nothing.
"""
