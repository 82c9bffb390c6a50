#!/bin/sh
# The part of the official image's docker-entrypoint.sh that docker-compose.cluster.yml relies on: on an
# empty PGDATA, initdb with POSTGRES_USER as the superuser and POSTGRES_PASSWORD as its password, create
# POSTGRES_DB, accept password logins over TCP from anywhere; then run the command (`postgres ...`).
set -eu
if [ "${1:-}" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
    : "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
    user="${POSTGRES_USER:-postgres}"
    db="${POSTGRES_DB:-$user}"
    pwfile="$(mktemp)"
    printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
    initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
        --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
    if [ "$db" != postgres ]; then
        echo "CREATE DATABASE \"$db\";" | postgres --single -D "$PGDATA" -j postgres >/dev/null
    fi
    echo "docker-entrypoint.sh: initialized $PGDATA (user $user, database $db)"
fi
exec "$@"
