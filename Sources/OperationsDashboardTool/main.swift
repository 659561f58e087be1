// operations-dashboard: serves the dashboard for one store, given on the command line.
#if Dashboard
import Foundation
import OperationsDashboard
import OperationsDurable
#if PostgreSQL
import OperationsPostgres
#endif
#if SQLite
import OperationsSQLite
#endif

let usage = """
    usage: operations-dashboard (--sqlite PATH | --postgres URL) [--host 127.0.0.1] [--port 8080]
                                [--refresh SECONDS] [--window MINUTES] [--allow-host NAME]…
    --refresh is the shortest time between two reads of the overview (2 s): after long reads
    the dashboard waits longer, so that reading takes at most 2 % of the time (30 s at most).
    Actions (cancel, retry, suspend, resume, limit) are enabled by setting the environment
    variable OPERATIONS_DASHBOARD_TOKEN; requests must then carry "Authorization: Bearer <token>".
    """

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("operations-dashboard: \(message)\n\(usage)\n".utf8))
    exit(2)
}

var options: [String: String] = [:]
var allowedHosts: [String] = []
var arguments = CommandLine.arguments.dropFirst()
while let flag = arguments.popFirst() {
    guard ["--sqlite", "--postgres", "--host", "--port", "--refresh", "--window", "--allow-host"].contains(flag) else {
        if flag == "--help" || flag == "-h" {
            print(usage)
            exit(0)
        }
        fail("unknown option \(flag)")
    }
    guard let value = arguments.popFirst() else { fail("\(flag) needs a value") }
    if flag == "--allow-host" { allowedHosts.append(value) } else { options[flag] = value }
}

var configuration = OperationsDashboard.Configuration()
configuration.allowedHosts = allowedHosts
if let host = options["--host"] { configuration.host = host }
if let text = options["--port"] {
    guard let port = Int(text), (0...65535).contains(port) else { fail("--port must be a port number, not \(text)") }
    configuration.port = port
}
if let text = options["--refresh"] {
    guard let seconds = Double(text), seconds.isFinite, seconds >= 0.1, seconds <= 3600 else {
        fail("--refresh must be a number of seconds from 0.1 to 3600, not \(text)")
    }
    configuration.refreshInterval = .milliseconds(Int(seconds * 1000))
}
if let text = options["--window"] {
    guard let minutes = Int(text), (1...10_080).contains(minutes) else { fail("--window must be a number of minutes from 1 to 10080, not \(text)") }
    configuration.finishedWindow = .seconds(minutes * 60)
}
if let token = ProcessInfo.processInfo.environment["OPERATIONS_DASHBOARD_TOKEN"], !token.isEmpty {
    configuration.actionToken = token
}

let opened: any DurableOperationStore
let storeName: String
let shutdown: @Sendable () async -> Void
switch (options["--sqlite"], options["--postgres"]) {
case (let path?, nil):
    #if SQLite
    let sqlite = SQLiteOperationStore(path: path)
    opened = sqlite
    storeName = "SQLite \(path)"
    shutdown = { await sqlite.shutdown() }
    #else
    fail("--sqlite needs the SQLite trait: swift run --traits Dashboard,SQLite operations-dashboard --sqlite \(path)")
    #endif
case (nil, let url?):
    #if PostgreSQL
    let postgres: PostgresOperationStore
    do { postgres = PostgresOperationStore(configuration: try .init(url: url)) } catch { fail("\(error)") }
    opened = postgres
    storeName = "PostgreSQL \(URL(string: url)?.host ?? "")\(URL(string: url)?.path ?? "")"
    shutdown = { await postgres.shutdown() }
    #else
    fail("--postgres needs the PostgreSQL trait: swift run --traits Dashboard,PostgreSQL operations-dashboard --postgres URL")
    #endif
default:
    fail("give one store: --sqlite PATH or --postgres URL")
}
guard let store = opened as? any DurableStoreInspection else { fail("\(storeName) cannot be inspected") }

// The dashboard does not migrate the store: the workers do. Reads of a store whose schema
// is older than the dashboard's fail, and the page says why.
let dashboard = OperationsDashboard(store: store, storeName: storeName, configuration: configuration)
let url: URL
do { url = try await dashboard.start() } catch { fail("\(error)") }
// Written at once (not buffered): a script that started the command reads the address.
FileHandle.standardOutput.write(Data(
    "operations-dashboard: serving \(storeName) at \(url)\(configuration.actionToken == nil ? " (read-only)" : " (actions enabled)")\n".utf8))
let stop = AsyncStream<Void>.makeStream()
let signals = [SIGINT, SIGTERM].map { number in
    signal(number, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: number)
    source.setEventHandler { stop.continuation.finish() }
    source.resume()
    return source
}
for await _ in stop.stream {}
await dashboard.stop()
await shutdown()
withExtendedLifetime(signals) {}
#else
print("operations-dashboard is built with the Dashboard trait and a store's: swift run --traits Dashboard,SQLite operations-dashboard --sqlite PATH (or Dashboard,PostgreSQL and --postgres URL)")
#endif
