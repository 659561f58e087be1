// A throwaway PostgreSQL cluster for the tests: initdb in a temporary directory, a free port
// on 127.0.0.1, removed when the test process exits.
#if PostgreSQL && SQLite

import Foundation
import Logging
import OperationsPostgres
import PostgresNIO
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A cluster started by the tests, as the `postgres` user when they run as root (the server
/// refuses to run as root).
final class PostgresCluster: Sendable {
    static let binaries = ProcessInfo.processInfo.environment["OPERATIONS_POSTGRES_BIN"] ?? "/usr/lib/postgresql/15/bin"
    static let missingMessage =
        "PostgreSQL's server binaries are not in \(binaries): install them with `apt-get update && apt-get install -y postgresql` (the durable tests against PostgreSQL are skipped)"

    static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: "\(binaries)/initdb")
            && FileManager.default.isExecutableFile(atPath: "\(binaries)/pg_ctl")
    }

    /// The cluster most tests share (each in a database of its own), stopped at exit.
    static func shared() async throws -> PostgresCluster {
        try await sharedStart.value
    }

    private static let sharedStart = Task {
        let cluster = try await PostgresCluster.start()
        sharedForExit.set(cluster)
        atexit { PostgresCluster.sharedForExit.value?.removeNow() }
        return cluster
    }

    private static let sharedForExit = Shared<PostgresCluster?>(nil)

    let directory: String
    let port: Int

    private init(directory: String, port: Int) {
        self.directory = directory
        self.port = port
    }

    static func start() async throws -> PostgresCluster {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("operations-durable-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if geteuid() == 0 { try await shell("chown postgres \(directory)") }
        try await runAsPostgres("\(binaries)/initdb -D \(directory)/data -A trust -U postgres --no-sync > \(directory)/initdb.log 2>&1")
        var lastError: (any Error)?
        for _ in 0..<10 {
            let cluster = PostgresCluster(directory: directory, port: freePort())
            do {
                try await cluster.pgctl("start -w -t 60")
                return cluster
            } catch {
                lastError = error
            }
        }
        throw lastError!
    }

    private func pgctl(_ command: String) async throws {
        try await Self.runAsPostgres(
            "\(Self.binaries)/pg_ctl -D \(directory)/data -o \"-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off\" -l \(directory)/log \(command)")
    }

    /// `pg_ctl restart`: the server stops (connections drop) and starts again on the same port.
    func restart() async throws {
        try await pgctl("restart -w -t 60 -m fast")
    }

    func remove() async {
        try? await pgctl("stop -w -m immediate")
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// For exit handlers, which cannot wait asynchronously.
    func removeNow() {
        _ = try? ChildProcess.spawn(Self.asPostgresArguments(
            "\(Self.binaries)/pg_ctl -D \(directory)/data stop -w -m immediate")).wait()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A new, empty database in the cluster, and a store on it (migrated).
    func makeStore(database: String? = nil, maximumConnections: Int = 8) async throws -> (PostgresOperationStore, String) {
        let name = database ?? "test_\(UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "_"))"
        try await execute("CREATE DATABASE \(name)")
        let store = PostgresOperationStore(configuration: configuration(database: name, maximumConnections: maximumConnections))
        try await store.migrate()
        return (store, name)
    }

    func configuration(database: String, maximumConnections: Int = 8) -> PostgresOperationStore.Configuration {
        .init(host: "127.0.0.1", port: port, username: "postgres", database: database, maximumConnections: maximumConnections)
    }

    /// Runs one statement on a database of the cluster, over a connection of its own.
    func execute(_ sql: String, database: String = "postgres") async throws {
        let connection = try await PostgresConnection.connect(
            configuration: .init(host: "127.0.0.1", port: port, username: "postgres", password: nil, database: database, tls: .disable),
            id: 99, logger: Logger(label: "test"))
        do {
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Logger(label: "test"))
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }

    /// The first column of the first row of a query that returns a `double precision`, over a
    /// connection of its own (a pool's connections may be waiting out a backoff).
    func double(_ sql: String, database: String) async throws -> Double? {
        let connection = try await PostgresConnection.connect(
            configuration: .init(host: "127.0.0.1", port: port, username: "postgres", password: nil, database: database, tls: .disable),
            id: 98, logger: Logger(label: "test"))
        defer { Task { try? await connection.close() } }
        let rows = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Logger(label: "test")).collect()
        return try rows.first?.decode(Double?.self)
    }

    private static func asPostgresArguments(_ command: String) -> [String] {
        if geteuid() == 0 {
            return ["/bin/sh", "-c", "su postgres -s /bin/sh -c '\(command.replacingOccurrences(of: "'", with: "'\\''"))'"]
        }
        return ["/bin/sh", "-c", command]
    }

    private static func runAsPostgres(_ command: String) async throws {
        let status = try await ChildProcess.spawn(asPostgresArguments(command)).exitStatus()
        guard status == 0 else {
            throw ClusterError(description: "`\(command)` exited with \(status)")
        }
    }

    static func shell(_ command: String) async throws {
        let status = try await ChildProcess.spawn(["/bin/sh", "-c", command]).exitStatus()
        guard status == 0 else {
            throw ClusterError(description: "`\(command)` exited with \(status)")
        }
    }

    private static func freePort() -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard bound else { return Int.random(in: 20_000..<60_000) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    struct ClusterError: Error, CustomStringConvertible {
        let description: String
    }
}
#endif
