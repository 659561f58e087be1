// The two stores under test, each opened fresh for every run, with one store per worker (the
// connections a worker would have in a process of its own).

import Foundation
import OperationsDurable
import OperationsPostgres
import OperationsSQLite
import PostgresNIO

/// A fresh database of one store kind, and the stores opened on it.
final class Database: @unchecked Sendable {
    // Used from the benchmark's one task at a time: `opened` is never touched concurrently.
    let kind: StoreKind
    let name: String
    private(set) var opened: [any DurableOperationStore] = []

    init(kind: StoreKind, name: String) async throws {
        self.kind = kind
        self.name = name
        switch kind {
        case .postgres:
            let admin = try await connect()
            try await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name)"), logger: logger)
            try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
            try await admin.close()
        case .sqlite:
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        try await open(connections: 2).migrate()
    }

    var path: String { "\(directory)/\(name).sqlite" }

    /// A store on this database, with at most `connections` PostgreSQL connections.
    func open(connections: Int) -> any DurableOperationStore {
        let store: any DurableOperationStore =
            switch kind {
            case .postgres:
                PostgresOperationStore(configuration: .init(
                    port: port, username: "postgres", database: name, maximumConnections: max(1, connections)))
            case .sqlite:
                SQLiteOperationStore(path: path)
            }
        opened.append(store)
        return store
    }

    /// The statements the stores sent (PostgreSQL only).
    var statements: Int? {
        guard kind == .postgres else { return nil }
        return opened.compactMap { ($0 as? PostgresOperationStore)?.statementsSent }.reduce(0, +)
    }

    func close() async {
        for store in opened {
            if let store = store as? PostgresOperationStore { await store.shutdown() }
            if let store = store as? SQLiteOperationStore { await store.shutdown() }
        }
        opened = []
    }

    /// Rows inserted, updated and deleted in the database so far (PostgreSQL's statistics,
    /// read once every store is closed: a backend reports its counts when it ends).
    func rowsWritten() async throws -> Int? {
        guard kind == .postgres else { return nil }
        let reader = try await connect(name)
        defer { Task { try? await reader.close() } }
        var last = -1
        // The ended backends' counts arrive shortly after they exit: read until they settle.
        for _ in 0..<20 {
            let rows = try await reader.query(
                "SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint FROM pg_stat_user_tables", logger: logger
            ).collect()
            let now = try Int(rows[0].decode(Int64.self))
            if now == last { return now }
            last = now
            try await Task.sleep(for: .milliseconds(300))
        }
        return last
    }
}

enum StoreKind: String, CaseIterable, Sendable {
    case postgres = "PostgreSQL"
    case sqlite = "SQLite"
}
