// A throwaway PostgreSQL cluster for the benchmark (fsync on), stopped when the process ends.

import Foundation
import Logging
import PostgresNIO

#if canImport(Glibc)
import Glibc
#endif

func shell(_ command: String) {
    var pid: pid_t = 0
    let words: [String] = ["/bin/sh", "-c", command]
    let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    guard posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ) == 0 else { fatalError("cannot run \(command)") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    guard status == 0 else { fatalError("`\(command)` failed with status \(status)") }
}

func asPostgres(_ command: String) {
    shell(geteuid() == 0 ? "su postgres -s /bin/sh -c '\(command)'" : command)
}

/// The cluster's data, socket and log; SQLite files go beside it.
let directory = "/tmp/durable-benchmark-\(getpid())"
let port = Int.random(in: 30_000..<60_000)
/// The folder of PostgreSQL's server binaries or, when none was found, where they were looked for.
let binaries: String = {
    let found = PostgresBinaries.find()
    return found.directory ?? "none found; searched: \(found.searched.joined(separator: "; ")); set OPERATIONS_POSTGRES_BIN to their folder"
}()

/// Where PostgreSQL's server binaries are, looked for as the tests look for them
/// (`Tests/OperationsDurableTests/Support/PostgresCluster.swift`): `OPERATIONS_POSTGRES_BIN`
/// alone when it is set; otherwise `pg_config --bindir`, every
/// `/usr/lib/postgresql/<version>/bin` (newest first), Homebrew's
/// `/opt/homebrew/opt/postgresql@<version>/bin` and `/usr/local/opt/postgresql@<version>/bin`
/// (newest first), then the folders of `PATH` that hold `initdb`.
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

func startCluster() {
    shell("mkdir -p \(directory)" + (geteuid() == 0 ? " && chown postgres \(directory)" : ""))
    asPostgres("\(binaries)/initdb -D \(directory)/data -A trust -U postgres > \(directory)/initdb.log 2>&1")
    asPostgres(
        "\(binaries)/pg_ctl -D \(directory)/data -o \"-p \(port) -k \(directory) -c listen_addresses=127.0.0.1\" -l \(directory)/log start -w > /dev/null")
}

func stopCluster() {
    asPostgres("\(binaries)/pg_ctl -D \(directory)/data stop -m fast > /dev/null")
    shell("rm -rf \(directory)")
}

let logger = Logger(label: "benchmark")
func connect(_ database: String = "postgres") async throws -> PostgresConnection {
    try await PostgresConnection.connect(
        configuration: .init(host: "127.0.0.1", port: port, username: "postgres", password: nil, database: database, tls: .disable),
        id: 0, logger: logger)
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
}

