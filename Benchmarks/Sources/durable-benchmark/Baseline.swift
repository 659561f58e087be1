// The baseline: a plain loop of single-row claims (`FOR UPDATE SKIP LOCKED`), each followed
// by its completion, each its own transaction: what a hand-rolled queue does.

import Foundation
import PostgresNIO

func baseline(count: Int, connections: Int) async throws -> Double {
    let setup = try await connect()
    try await setup.query("DROP TABLE IF EXISTS plain_jobs", logger: logger)
    try await setup.query(
        "CREATE TABLE plain_jobs (id bigserial PRIMARY KEY, state text NOT NULL DEFAULT 'ready', priority integer NOT NULL DEFAULT 0, scheduled_at timestamptz NOT NULL DEFAULT now())",
        logger: logger)
    try await setup.query("CREATE INDEX plain_jobs_ready ON plain_jobs (priority DESC, scheduled_at, id) WHERE state = 'ready'", logger: logger)
    try await setup.query("INSERT INTO plain_jobs (state) SELECT 'ready' FROM generate_series(1, \(count))", logger: logger)
    try await setup.close()
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<connections {
            group.addTask {
                let connection = try await connect()
                while true {
                    let rows = try await connection.query(
                        """
                        UPDATE plain_jobs SET state = 'running' WHERE id = (SELECT id FROM plain_jobs WHERE state = 'ready'
                            ORDER BY priority DESC, scheduled_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id
                        """, logger: logger
                    ).collect()
                    guard let id = try rows.first?.decode(Int64.self) else { break }
                    try await connection.query("UPDATE plain_jobs SET state = 'done' WHERE id = \(id)", logger: logger)
                }
                try await connection.close()
            }
        }
        try await group.waitForAll()
    }
    return Double(count) / seconds(ContinuousClock.now - start)
}

