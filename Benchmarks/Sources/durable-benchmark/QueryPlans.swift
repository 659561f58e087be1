// The plans the databases choose for the statements of the dashboard's benchmarks, printed
// under each statement's name.

import PostgresNIO
import SQLiteNIO

enum QueryPlans {
    /// PostgreSQL's plans on `database`: `EXPLAIN (options)` of each statement, a line per row.
    static func postgres(
        _ database: String, options: String, _ statements: [(name: String, query: PostgresQuery)]
    ) async throws -> [String] {
        let connection = try await connect(database)
        var lines: [String] = []
        do {
            for (name, statement) in statements {
                var explain = statement
                explain.sql = "EXPLAIN (\(options)) " + explain.sql
                let rows = try await connection.query(explain, logger: logger).collect()
                lines.append("PostgreSQL, \(name):")
                lines += try rows.map { "    " + (try $0.decode(String.self)) }
                lines.append("")
            }
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
        return lines
    }

    /// SQLite's plans on the file at `path`: `EXPLAIN QUERY PLAN` of each statement, indented by
    /// depth. `statements` may read the database first (a cursor's finish time).
    static func sqlite(
        path: String, _ statements: (SQLiteConnection) async throws -> [(name: String, sql: String, binds: [SQLiteData])]
    ) async throws -> [String] {
        let connection = try await SQLiteConnection.open(storage: .file(path: path))
        var lines: [String] = []
        do {
            for (name, sql, binds) in try await statements(connection) {
                let rows = try await connection.query("EXPLAIN QUERY PLAN " + sql, binds)
                var depth: [Int: Int] = [0: 0]
                lines.append("SQLite, \(name):")
                for row in rows {
                    let id = Int(row.column("id")?.integer ?? 0), parent = Int(row.column("parent")?.integer ?? 0)
                    let level = (depth[parent] ?? 0) + 1
                    depth[id] = level
                    lines.append(String(repeating: "  ", count: level + 1) + (row.column("detail")?.string ?? ""))
                }
                lines.append("")
            }
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
        return lines
    }
}
