// What only the PostgreSQL store does: its schema, its connection, transactional enqueue.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
import Logging
import NIOSSL
import OperationsDurable
import OperationsPostgres
import PostgresNIO
import Testing

@Suite(
    "The PostgreSQL store", .enabled(if: PostgresCluster.isAvailable, Comment(rawValue: PostgresCluster.missingMessage)),
    .timeLimit(.minutes(2)))
struct PostgresStoreTests {
    @Test("migrating again, and from several stores at once, leaves one schema of the current version")
    func migrateIsIdempotentAndConcurrent() async throws {
        let cluster = try await PostgresCluster.shared()
        let (first, database) = try await cluster.makeStore()
        defer { Task { await first.shutdown() } }
        try await first.migrate()
        let stores = (0..<4).map { _ in PostgresOperationStore(configuration: cluster.configuration(database: database)) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for store in stores { group.addTask { try await store.migrate() } }
            try await group.waitForAll()
        }
        for store in stores { await store.shutdown() }
        let rows = try await first.client.query("SELECT version FROM durable_schema").collect()
        #expect(rows.count == 1)
        #expect(try rows.first?.decode(Int.self) == 8)
    }

    @Test("a store of version 1 is upgraded: claims find an operation's dependencies by an index")
    func upgradeFromVersion1() async throws {
        let cluster = try await PostgresCluster.shared()
        let (store, _) = try await cluster.makeStore()
        // What version 1 left: the same tables, without the index on edges by dependent, the
        // functions of versions 3, 4, 6 and 7, the retry's columns of version 6 and the index of
        // version 7.
        try await store.client.query(
            """
            DROP FUNCTION durable_enqueue(text, text, text, integer, text, timestamptz, bigint, double precision[],
                double precision, double precision, double precision, boolean, bigint[], boolean)
            """)
        try await store.client.query("DROP FUNCTION durable_retry_wait")
        try await store.client.query(
            """
            ALTER TABLE durable_operations DROP COLUMN given_back, DROP COLUMN retry_initial, DROP COLUMN retry_multiplier,
                DROP COLUMN retry_maximum, DROP COLUMN retry_jittered, ALTER COLUMN max_attempts TYPE integer
            """)
        try await store.client.query("DROP INDEX durable_edges_dependent")
        try await store.client.query("DROP FUNCTION durable_claim_operations")
        try await store.client.query("DROP FUNCTION durable_give_back_attempts")
        try await store.client.query("DROP FUNCTION durable_settle_successes")
        try await store.client.query("DROP FUNCTION durable_enqueue_batch")
        try await store.client.query("DROP FUNCTION durable_complete_and_claim")
        try await store.client.query("DROP INDEX durable_operations_waiting")
        for index in ["durable_operations_queue_finished", "durable_operations_failures", "durable_operations_kind", "durable_operations_key_search"] {
            try await store.client.query(PostgresQuery(unsafeSQL: "DROP INDEX \(index)"))
        }
        try await store.client.query("DROP FUNCTION durable_retry")
        try await store.client.query("UPDATE durable_schema SET version = 1")
        try await store.migrate()
        let version = try await store.client.query("SELECT version FROM durable_schema").collect()
        #expect(try version.first?.decode(Int.self) == 8)
        let index = try await store.client.query(
            "SELECT count(*) FROM pg_indexes WHERE indexname = 'durable_edges_dependent'").collect()
        #expect(try index.first?.decode(Int.self) == 1)
        let queue = DurableQueue(name: "default", store: store)
        let first = try await queue.add(Echo.self, input: 1)
        let second = try await queue.add(Echo.self, input: 2, dependencies: [first])
        let claimed = try await store.claim(queue: "default", kinds: ["echo"], worker: "w", limit: 2, lease: .seconds(5))
        #expect(claimed.map(\.id) == [first.id])
        #expect(claimed.first?.dependencies == [] && claimed.first?.maximumAttempts == 3)
        try await store.complete([DurableCompletion(id: first.id, attempt: 1, result: .succeeded(output: "1"))], worker: "w")
        let next = try await store.claim(queue: "default", kinds: ["echo"], worker: "w", limit: 2, lease: .seconds(5))
        #expect(next.map(\.id) == [second.id])
        #expect(next.first?.dependencies == [first.id])
        await store.shutdown()
    }

    @Test("a schema newer than the library is refused with a message")
    func newerSchemaIsRefused() async throws {
        let cluster = try await PostgresCluster.shared()
        let (store, _) = try await cluster.makeStore()
        try await store.client.query("UPDATE durable_schema SET version = 99")
        let error = await #expect(throws: DurableError.self) { try await store.migrate() }
        #expect(error?.code == .schemaTooNew)
        #expect(error?.message.contains("version 99") == true, "\(String(describing: error))")
        await store.shutdown()
    }

    @Test("an unreachable database is a thrown error naming host and port")
    func unreachableDatabaseNamesHostAndPort() async throws {
        let cluster = try await PostgresCluster.shared()
        // A port nothing listens on: the cluster's, plus one, was free when checked.
        let store = PostgresOperationStore(configuration: .init(host: "127.0.0.1", port: 1, username: "postgres"))
        let error = await #expect(throws: DurableError.self) { try await store.migrate() }
        #expect(error?.code == .databaseUnreachable)
        #expect(error?.message.contains("127.0.0.1:1") == true, "\(String(describing: error))")
        let worker = DurableWorker(store: store, queues: ["default"], kinds: allTestKinds)
        await #expect(throws: DurableError.self) { try await worker.run() }
        await store.shutdown()
        _ = cluster
    }

    @Test("a store that requires TLS does not connect to a server without it, in its connection check either")
    func requiredTLSIsUsedByTheConnectionCheck() async throws {
        let cluster = try await PostgresCluster.shared()
        var configuration = cluster.configuration(database: "postgres")
        configuration.tls = .require(.makeClientConfiguration())
        let store = PostgresOperationStore(configuration: configuration)
        let error = await #expect(throws: DurableError.self) { try await store.checkConnection() }
        #expect(error?.code == .databaseUnreachable)
        await store.shutdown()
    }

    @Test("an operation added in the application's transaction is visible at commit and gone on rollback")
    func transactionalEnqueue() async throws {
        let cluster = try await PostgresCluster.shared()
        let (store, _) = try await cluster.makeStore()
        let queue = DurableQueue(name: "default", store: store)
        let logger = Logger(label: "test")
        try await store.client.query("CREATE TABLE orders (id integer PRIMARY KEY)")
        struct Rollback: Error {}
        // Rolled back: neither the order nor the operation exists.
        let rolledBack = Shared<DurableOperationID?>(nil)
        await #expect(throws: (any Error).self) {
            try await store.client.withTransaction(logger: logger) { connection in
                try await connection.query("INSERT INTO orders VALUES (1)", logger: logger)
                let handle = try await queue.add(Echo.self, input: 1, on: connection)
                rolledBack.set(handle.id)
                throw Rollback()
            }
        }
        let rolledBackID = try #require(rolledBack.value)
        #expect(try await store.record(of: rolledBackID, includingAttempts: false) == nil)
        // Committed: both exist, and a worker runs the operation.
        let committed = try await store.client.withTransaction(logger: logger) { connection in
            try await connection.query("INSERT INTO orders VALUES (2)", logger: logger)
            return try await queue.add(Echo.self, input: 2, on: connection)
        }
        let value = try await valueRunningAWorker(of: committed, on: store, "the committed operation")
        #expect(value == 2)
        let orders = try await store.client.query("SELECT id FROM orders").collect()
        #expect(try orders.map { try $0.decode(Int.self) } == [2])
        await store.shutdown()
    }

    @Test("an error text with a NUL character is recorded with the character replaced, and the others of its batch complete")
    func errorTextWithNulCharacter() async throws {
        let cluster = try await PostgresCluster.shared()
        let (store, _) = try await cluster.makeStore()
        let queue = DurableQueue(name: "default", store: store)
        let failing = try await queue.add(Echo.self, input: 1, retry: .never)
        let succeeding = try await queue.add(Echo.self, input: 2)
        let claims = try await store.claim(queue: "default", kinds: ["echo"], worker: "w", limit: 2, lease: .seconds(60))
        #expect(claims.map(\.id) == [failing.id, succeeding.id])
        try await store.complete(
            [
                DurableCompletion(id: failing.id, attempt: 1, result: .failed(error: "bad\u{0}text")),
                DurableCompletion(id: succeeding.id, attempt: 1, result: .succeeded(output: "2")),
            ], worker: "w")
        #expect(try await failing.outcome == .failed("bad\u{FFFD}text"))
        #expect(try await succeeding.value == 2)
        await store.shutdown()
    }

    @Test("a claim that waited for its queue's limit reports the maximum and dependencies of an operation committed meanwhile")
    func claimReportsOperationCommittedWhileItWaited() async throws {
        let cluster = try await PostgresCluster.shared()
        let (store, database) = try await cluster.makeStore()
        let queue = DurableQueue(name: "limited", store: store)
        // With a limit, a claim locks the queue's row before it picks operations.
        try await queue.setMaxConcurrentOperationCount(4)
        let logger = Logger(label: "test")
        let dependency = try await queue.add(Echo.self, input: 1)
        _ = try await store.claim(queue: "limited", kinds: ["echo"], worker: "w", limit: 1, lease: .seconds(60))
        try await store.complete([DurableCompletion(id: dependency.id, attempt: 1, result: .succeeded(output: "1"))], worker: "w")
        let other = try await PostgresConnection.connect(
            configuration: .init(host: "127.0.0.1", port: cluster.port, username: "postgres", password: nil, database: database, tls: .disable),
            id: 97, logger: logger)
        do {
            try await other.query("BEGIN", logger: logger)
            try await other.query("SELECT 1 FROM durable_queues WHERE name = 'limited' FOR UPDATE", logger: logger)
            let claiming = Task {
                try await store.claim(queue: "limited", kinds: ["echo"], worker: "w", limit: 1, lease: .seconds(60))
            }
            // The claim's statement has begun (its snapshot is taken) and waits for the row.
            // Read outside the open transaction, whose view of the statistics stays as first read.
            try await pollUntil(30, "the claim waiting for the queue's row") {
                let rows = try await store.client.query(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%durable_claim%' AND pid <> pg_backend_pid()"
                ).collect()
                return try rows.first?.decode(Int.self) ?? 0 > 0
            }
            let added = try await queue.add(
                Echo.self, input: 2, dependencies: [dependency], retry: DurableRetry(maximumAttempts: 5), on: other)
            try await other.query("COMMIT", logger: logger)
            let claims = try await within(30, "the claim") { try await claiming.value }
            #expect(claims.map(\.id) == [added.id])
            #expect(claims.first?.maximumAttempts == 5)
            #expect(claims.first?.dependencies == [dependency.id])
        } catch {
            try? await other.close()
            throw error
        }
        try await other.close()
        await store.shutdown()
    }

    @Test("a dependent added in an open transaction holds off its running dependency's finish, not its heartbeat")
    func dependentInOpenTransactionLocksOnlyAgainstFinish() async throws {
        let cluster = try await PostgresCluster.shared()
        let (store, database) = try await cluster.makeStore()
        let queue = DurableQueue(name: "default", store: store)
        let logger = Logger(label: "test")
        let dependency = try await queue.add(Echo.self, input: 1)
        let claims = try await store.claim(queue: "default", kinds: ["echo"], worker: "w", limit: 1, lease: .seconds(60))
        #expect(claims.map(\.id) == [dependency.id])
        let other = try await PostgresConnection.connect(
            configuration: .init(host: "127.0.0.1", port: cluster.port, username: "postgres", password: nil, database: database, tls: .disable),
            id: 98, logger: logger)
        // A bound on waiting for a row lock: a statement that would wait fails instead.
        try await other.query("SET lock_timeout = '2s'", logger: logger)
        let id = dependency.id.rawValue
        do {
            try await store.client.withTransaction(logger: logger) { connection in
                _ = try await queue.add(Echo.self, input: 2, dependencies: [dependency], on: connection)
                let renewed = try await other.query(
                    "SELECT operation_id FROM durable_heartbeat('w', ARRAY['default'], ARRAY['echo'], ARRAY[\(id)]::bigint[], 60)",
                    logger: logger
                ).collect()
                #expect(renewed.count == 1, "the heartbeat renewed the dependency's lease while the dependent's transaction was open")
                await #expect(throws: PSQLError.self, "finishing the dependency waits for the dependent's transaction") {
                    try await other.query(
                        "SELECT durable_complete('w', ARRAY[\(id)]::bigint[], ARRAY[1], ARRAY['succeeded'], ARRAY['1'])", logger: logger
                    ).collect()
                }
            }
        } catch {
            try? await other.close()
            throw error
        }
        try await other.close()
        await store.shutdown()
    }
}
#endif

#if PostgreSQL && SQLite
@Suite("PostgreSQL connection URLs")
struct PostgresURLTests {
    @Test("a URL gives host, port, user, password, database and TLS mode; what it leaves out has its default")
    func urlParts() throws {
        let full = try PostgresOperationStore.Configuration(url: "postgresql://app:secret@db.example:6543/jobs?sslmode=disable")
        #expect(full.host == "db.example")
        #expect(full.port == 6543)
        #expect(full.username == "app")
        #expect(full.password == "secret")
        #expect(full.database == "jobs")
        let short = try PostgresOperationStore.Configuration(url: "postgres://127.0.0.1")
        #expect(short.port == 5432)
        #expect(short.username == "postgres")
        #expect(short.password == nil)
        #expect(short.database == nil)
    }

    @Test("a URL that is not PostgreSQL's, or names no host or an unknown sslmode, is refused without its password")
    func badURLs() {
        for text in ["http://u:hunter2@host/db", "postgres:///db", "postgres://u:hunter2@host/db?sslmode=sometimes", "not a url"] {
            let error = #expect(throws: DurableError.self) { try PostgresOperationStore.Configuration(url: text) }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains("hunter2") == false, "\(String(describing: error))")
        }
    }
}
#endif
