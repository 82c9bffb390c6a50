"""Migration 9's SQL ("metadata_expect", issue 34 in cluster mode): `kcoord_metadata_put` takes, per
entry, the sequence number of the row the writer based it on (`p_expected`; 0: no row; NULL: no
condition), and writes nothing when a row of that key was written since (STALE_METADATA_SQLSTATE,
DETAIL the refused keys in hex).

Why: a group's configs are altered as a whole set computed from the node's copy (IncrementalAlterConfigs
applies its operations to the current configs), so two alters of one group through two nodes at the
same moment each wrote a set without the other's change, and one change was lost. Kafka's controller
applies them in turn (ConfigurationControlManager.incrementalAlterConfigs). With the condition the
second writer is refused, follows the first one's row and computes its set again
(kcoord/broker/apis/alter_configs.py).

The four-argument calls of nodes not yet upgraded resolve to this function (p_expected defaults to
NULL) and behave as before.
"""

from __future__ import annotations

__all__ = ["METADATA_EXPECT", "STALE_METADATA_SQLSTATE"]

STALE_METADATA_SQLSTATE = "KC004"
"""Raised by `kcoord_metadata_put` when an entry's expected sequence number is not its key's current
one: another node wrote the key since the writer's copy was read. Nothing of the batch was written."""

# migrations._METADATA_LOCK_KEY, written out as migration_group_configs.py does (migrations.py imports this)
_LOCK_KEY = 0x6B636F6F72646D
_IDENTITY_TAKEN = "KC003"

METADATA_EXPECT = f"""
DROP FUNCTION kcoord_metadata_put(smallint[], bytea[], bytea[], bytea[]);
CREATE FUNCTION kcoord_metadata_put(
    p_types smallint[], p_keys bytea[], p_values bytea[], p_identities bytea[] DEFAULT NULL,
    p_expected bigint[] DEFAULT NULL
) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
    v_seq bigint;
    v_taken text;
BEGIN
    IF current_setting('synchronous_commit') = 'off' THEN
        PERFORM set_config('synchronous_commit', 'on', true);
    END IF;
    -- One writer at a time, until commit: the checks and the write cannot interleave with another
    -- node's, and seq order is commit order (a follower reading seq > last never skips a row
    -- committed late with a smaller seq).
    PERFORM pg_advisory_xact_lock({_LOCK_KEY});
    SELECT string_agg(DISTINCT encode(u.key, 'hex'), ',') INTO v_taken
      FROM unnest(p_types, p_keys, p_identities) AS u(type, key, identity)
      JOIN kcoord_metadata AS m ON m.type = u.type AND m.key = u.key
     WHERE u.identity IS NOT NULL AND m.value IS NOT NULL AND m.identity IS DISTINCT FROM u.identity;
    IF v_taken IS NOT NULL THEN
        RAISE EXCEPTION 'kcoord_metadata_put: keys held by another identity'
            USING ERRCODE = '{_IDENTITY_TAKEN}', DETAIL = v_taken;
    END IF;
    IF p_expected IS NOT NULL THEN
        SELECT string_agg(DISTINCT encode(u.key, 'hex'), ',') INTO v_taken
          FROM unnest(p_types, p_keys, p_expected) AS u(type, key, expected)
          LEFT JOIN kcoord_metadata AS m ON m.type = u.type AND m.key = u.key
         WHERE u.expected IS NOT NULL AND coalesce(m.seq, 0) <> u.expected;
        IF v_taken IS NOT NULL THEN
            RAISE EXCEPTION 'kcoord_metadata_put: keys written since the writer read them'
                USING ERRCODE = '{STALE_METADATA_SQLSTATE}', DETAIL = v_taken;
        END IF;
    END IF;
    -- One row per (type, key), the batch's newest entry winning, each with a fresh seq in batch order.
    INSERT INTO kcoord_metadata AS m (type, key, value, identity, seq)
    SELECT b.type, b.key, b.value, b.identity, nextval('kcoord_metadata_seq')
      FROM (SELECT DISTINCT ON (u.type, u.key) u.type, u.key, u.value, u.identity, u.ord
              FROM unnest(p_types, p_keys, p_values, p_identities)
                   WITH ORDINALITY AS u(type, key, value, identity, ord)
             ORDER BY u.type, u.key, u.ord DESC) AS b
     ORDER BY b.ord
    ON CONFLICT (type, key)
    DO UPDATE SET value = excluded.value, identity = excluded.identity, seq = excluded.seq;
    SELECT max(seq) INTO v_seq FROM kcoord_metadata;
    PERFORM pg_notify('kcoord_metadata', v_seq::text);
    RETURN v_seq;
END
$fn$;
"""
