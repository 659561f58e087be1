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
let binaries = "/usr/lib/postgresql/15/bin"

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

