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
    static let search = PostgresBinaries.find()
    /// The folder of the server binaries (empty when none was found).
    static var binaries: String { search.directory ?? "" }
    static var missingMessage: String {
        "PostgreSQL's server binaries (\(PostgresBinaries.needed.joined(separator: ", "))) were not found, so the durable tests against PostgreSQL are skipped. Searched: \(search.searched.joined(separator: "; ")). Set OPERATIONS_POSTGRES_BIN to the folder that holds them."
    }

    static var isAvailable: Bool { search.directory != nil }

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
            "\(Self.binaries)/pg_ctl -D \(directory)/data -o \"-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c max_connections=1000 -c fsync=off\" -l \(directory)/log \(command)")
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

/// Where PostgreSQL's server binaries are, looked for where Debian, Ubuntu and Homebrew put
/// them: `OPERATIONS_POSTGRES_BIN` alone when it is set; otherwise `pg_config --bindir`,
/// every `/usr/lib/postgresql/<version>/bin` (newest first), Homebrew's
/// `/opt/homebrew/opt/postgresql@<version>/bin` and `/usr/local/opt/postgresql@<version>/bin`
/// (newest first), then the folders of `PATH` that hold `initdb`.
/// (The benchmark's `Cluster.swift` looks the same way.)
struct PostgresBinaries: Sendable {
    static let needed = ["initdb", "pg_ctl", "postgres"]

    /// The first folder that holds all of ``needed``.
    let directory: String?
    /// The places looked at before it (all of them when none did), each with what it lacked.
    let searched: [String]

    static func find(environment: [String: String] = ProcessInfo.processInfo.environment) -> PostgresBinaries {
        var searched: [String] = []
        func holdsAll(_ folder: String, _ source: String) -> Bool {
            let missing = needed.filter { !FileManager.default.isExecutableFile(atPath: "\(folder)/\($0)") }
            if missing.isEmpty { return true }
            searched.append("\(source) \(folder) (no \(missing.joined(separator: ", ")))")
            return false
        }
        if let folder = environment["OPERATIONS_POSTGRES_BIN"], !folder.isEmpty {
            return PostgresBinaries(directory: holdsAll(folder, "OPERATIONS_POSTGRES_BIN:") ? folder : nil, searched: searched)
        }
        var candidates: [(folder: String, source: String)] = []
        if let folder = pgConfigBindir() {
            candidates.append((folder, "pg_config --bindir:"))
        } else {
            searched.append("pg_config --bindir (no pg_config on PATH)")
        }
        let debian = versionFolders(in: "/usr/lib/postgresql", prefix: "").map { "/usr/lib/postgresql/\($0)/bin" }
        if debian.isEmpty { searched.append("/usr/lib/postgresql/*/bin (none)") }
        candidates += debian.map { ($0, "Debian's") }
        var homebrew: [String] = []
        for prefix in ["/opt/homebrew/opt", "/usr/local/opt"] {
            homebrew += versionFolders(in: prefix, prefix: "postgresql@").map { "\(prefix)/postgresql@\($0)/bin" }
            homebrew.append("\(prefix)/postgresql/bin")
        }
        homebrew = homebrew.filter { FileManager.default.fileExists(atPath: $0) }
        if homebrew.isEmpty { searched.append("Homebrew's /opt/homebrew/opt/postgresql@*/bin and /usr/local/opt/postgresql@*/bin (none)") }
        candidates += homebrew.map { ($0, "Homebrew's") }
        let path = (environment["PATH"] ?? "").split(separator: ":").map(String.init)
        let onPath = path.filter { FileManager.default.isExecutableFile(atPath: "\($0)/initdb") }
        if onPath.isEmpty { searched.append("PATH (no initdb in \(path.joined(separator: ":")))") }
        candidates += onPath.map { ($0, "PATH:") }
        var seen: Set<String> = []
        for candidate in candidates where seen.insert(candidate.folder).inserted {
            if holdsAll(candidate.folder, candidate.source) {
                return PostgresBinaries(directory: candidate.folder, searched: searched)
            }
        }
        return PostgresBinaries(directory: nil, searched: searched)
    }

    /// The versions of the entries of `folder` named `prefix` + a version, newest first.
    private static func versionFolders(in folder: String, prefix: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        let versions = names.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
            .filter { !$0.isEmpty && $0.allSatisfy { $0.isNumber || $0 == "." } }
        let numbers = { (version: String) in version.split(separator: ".").map { Int($0) ?? 0 } }
        return versions.sorted { numbers($0).lexicographicallyPrecedes(numbers($1)) }.reversed()
    }

    /// What `pg_config --bindir` prints, when `pg_config` is on `PATH`.
    private static func pgConfigBindir() -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["pg_config", "--bindir"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let folder = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return process.terminationStatus == 0 && !folder.isEmpty ? folder : nil
    }
}
#endif
