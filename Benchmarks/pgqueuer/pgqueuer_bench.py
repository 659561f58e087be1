#!/usr/bin/env python3
"""pgqueuer's side of the durable benchmark's "Against pgqueuer" section.

Written against pgqueuer 1.6's public API (PgQueuer, Queries, AsyncpgDriver):

    pgqueuer_bench.py install-schema --dsn DSN   # pgqueuer's schema, as `pgq install` makes it
    pgqueuer_bench.py fill N --dsn DSN           # N no-op jobs of entrypoint "noop", in batches
    pgqueuer_bench.py work --dsn DSN             # one worker at pgqueuer's defaults until the queue is empty

The DSN is an asyncpg one (postgresql://user@host:port/database); without --dsn it is read
from PGQUEUER_BENCH_DSN.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

import asyncpg
from pgqueuer import PgQueuer
from pgqueuer.db import AsyncpgDriver
from pgqueuer.models import Job
from pgqueuer.queries import Queries

ENTRYPOINT = "noop"
FILL_BATCH = 1_000


async def install_schema(dsn: str) -> None:
    """What `pgq install` does: install unless an installation is already there."""
    connection = await asyncpg.connect(dsn)
    try:
        queries = Queries(AsyncpgDriver(connection))
        if not await queries.schema_is_installed():
            await queries.install()
    finally:
        await connection.close()


async def fill(dsn: str, count: int) -> None:
    """Enqueues `count` jobs without payload, FILL_BATCH per statement."""
    connection = await asyncpg.connect(dsn)
    try:
        queries = Queries(AsyncpgDriver(connection))
        for start in range(0, count, FILL_BATCH):
            size = min(FILL_BATCH, count - start)
            await queries.enqueue([ENTRYPOINT] * size, [None] * size, [0] * size)
    finally:
        await connection.close()


async def work(dsn: str, poll_seconds: float) -> None:
    """One worker with PgQueuer.run()'s defaults (nothing passed to run()); a side task
    counts the queue on a connection of its own and sets pgqueuer's shutdown event once
    no job is left (finished jobs leave pgqueuer's queue table)."""
    connection = await asyncpg.connect(dsn)
    watcher_connection = await asyncpg.connect(dsn)
    pgq = PgQueuer(AsyncpgDriver(connection))

    @pgq.entrypoint(ENTRYPOINT)
    async def noop(job: Job) -> None:
        return None

    watcher = Queries(AsyncpgDriver(watcher_connection))

    async def stop_when_empty() -> None:
        while not pgq.shutdown.is_set():
            await asyncio.sleep(poll_seconds)
            if sum(row.count for row in await watcher.queue_size()) == 0:
                pgq.shutdown.set()

    watch = asyncio.create_task(stop_when_empty())
    try:
        await pgq.run()
    finally:
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)
        await watcher_connection.close()
        await connection.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["install-schema", "fill", "work"])
    parser.add_argument("count", nargs="?", type=int, help="fill: how many jobs")
    parser.add_argument("--dsn", default=os.environ.get("PGQUEUER_BENCH_DSN"))
    parser.add_argument("--poll", type=float, default=0.05, help="work: seconds between counts of the queue")
    arguments = parser.parse_args()
    if not arguments.dsn:
        parser.error("no DSN: pass --dsn or set PGQUEUER_BENCH_DSN")
    # pgqueuer logs each job at debug level only; warnings and errors still show.
    logging.getLogger("pgqueuer").setLevel(logging.WARNING)

    if arguments.mode == "install-schema":
        asyncio.run(install_schema(arguments.dsn))
    elif arguments.mode == "fill":
        if arguments.count is None or arguments.count < 1:
            parser.error("fill needs a positive count")
        asyncio.run(fill(arguments.dsn, arguments.count))
    else:
        asyncio.run(work(arguments.dsn, arguments.poll))
    return 0


if __name__ == "__main__":
    sys.exit(main())
