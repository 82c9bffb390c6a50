# kcoord as a container: `docker build -t kcoord .` then `docker run -p 9092:9092 -v kcoord-data:/var/lib/kcoord kcoord`.
# BASE is any Debian-like image with python3 (3.11+) and its venv module; the default is the official
# slim image. Where no registry is reachable, pass a locally built one: --build-arg BASE=localhost/...
ARG BASE=python:3.11-slim

# -- build: a virtualenv with kcoord and its wheels (uvloop, crc32c, cramjam, construct), and the `cluster`
# extra (asyncpg, one wheel of a few MB) so that the same image serves `--cluster postgresql://...` --------
FROM ${BASE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
RUN python3 -m venv /opt/kcoord
WORKDIR /src
COPY pyproject.toml README.md ./
COPY kcoord ./kcoord
# The installer is not needed at run time: the final image gets the venv without pip or setuptools.
RUN /opt/kcoord/bin/pip install ".[cluster]" \
    && /opt/kcoord/bin/python -c "import uvloop, crc32c, cramjam, asyncpg, kcoord.wiring.app" \
    && /opt/kcoord/bin/pip uninstall --yes pip setuptools

# -- run: the base plus the venv, a non-root user and the data volume -----------------------------------
FROM ${BASE}
RUN groupadd --system --gid 10001 kcoord \
    && useradd --system --no-log-init --uid 10001 --gid kcoord --home-dir /var/lib/kcoord \
       --shell /usr/sbin/nologin kcoord \
    && mkdir -p /var/lib/kcoord \
    && chown kcoord:kcoord /var/lib/kcoord
COPY --from=build /opt/kcoord /opt/kcoord
# Every `kcoord serve` flag has a KCOORD_* variable (`kcoord serve --help`); these fit the image:
# Kafka on 9092, HTTP (/metrics, /readyz, /v1/groups; test controls need KCOORD_ENABLE_TEST_CONTROLS)
# on 8080.
# Clients are told KCOORD_ADVERTISED_LISTENER (default 127.0.0.1:<port>, right for `-p 9092:9092` from
# the host); in compose set it to the service name, e.g. kcoord:9092.
ENV PATH=/opt/kcoord/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    KCOORD_LISTEN=0.0.0.0:9092 \
    KCOORD_HTTP_LISTEN=0.0.0.0:8080 \
    KCOORD_DATA_DIR=/var/lib/kcoord
USER 10001:10001
WORKDIR /var/lib/kcoord
VOLUME ["/var/lib/kcoord"]
EXPOSE 9092 8080
# Healthy = recovery finished and the listener answers ApiVersions (the listener binds only after
# recovery). `kcoord health` speaks the Kafka protocol; no curl in the image.
HEALTHCHECK --interval=5s --timeout=3s --start-period=60s --retries=3 CMD ["kcoord", "health"]
# kcoord is PID 1 (exec form, no shell): SIGTERM -> stop accepting, answer in-flight requests, flush,
# fsync, write the snapshot, exit 0 -- well within `docker stop`'s default 10 s.
STOPSIGNAL SIGTERM
ENTRYPOINT ["kcoord"]
CMD ["serve"]
