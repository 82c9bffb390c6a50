"""Child process for the crash test: appends forever, printing each acknowledged record."""

from __future__ import annotations

import asyncio
import random
import sys

from kcoord.storage import Log, LogConfig, Record


async def main(directory: str, seed: int) -> None:
    rng = random.Random(seed)
    log = await Log.open(directory, LogConfig(fsync_policy="always", segment_bytes=4096))
    counter = 0
    while True:
        batch = []
        for _ in range(rng.randint(1, 4)):
            counter += 1
            key = b"k%d" % rng.randint(0, 30)
            value = b"%d-%d" % (seed, counter)
            batch.append(Record(0, key, value))
        await log.append(batch)
        for record in batch:
            assert record.value is not None
            sys.stdout.write(f"{record.key.decode()} {record.value.decode()}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
