// A worker process for the multi-process durable tests:
// DurableTestWorker (--port P [--database D] | --sqlite PATH) --name N [--queue Q]… [--concurrency C]
//     [--die after-claim|before-completion --die-with KIND] [--plain 1] [--shutdown-deadline-ms MS]
// Stops gracefully on SIGTERM; the tests also kill it with SIGKILL. With `--plain 1` it runs
// the worker without a ServiceGroup, as `try await worker.run()`.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
import Logging
import OperationsDurable
import OperationsPostgres
import OperationsSQLite
import ServiceLifecycle

var options: [String: [String]] = [:]
var arguments = CommandLine.arguments.dropFirst()
while let flag = arguments.popFirst(), let value = arguments.popFirst() {
    options[String(flag.dropFirst(2)), default: []].append(value)
}
/// The store the options name, and how to close it.
func makeStore(_ options: [String: [String]]) -> (any DurableOperationStore, @Sendable () async -> Void) {
    if let path = options["sqlite"]?.first {
        let sqlite = SQLiteOperationStore(path: path)
        return (sqlite, { await sqlite.shutdown() })
    }
    if let port = options["port"]?.first.flatMap(Int.init) {
        let postgres = PostgresOperationStore(
            configuration: .init(
                host: "127.0.0.1", port: port, username: "postgres", database: options["database"]?.first ?? "postgres",
                maximumConnections: 4))
        return (postgres, { await postgres.shutdown() })
    }
    FileHandle.standardError.write(
        Data("usage: DurableTestWorker (--port P [--database D] | --sqlite PATH) --name N [--queue Q]… [--concurrency C]\n".utf8))
    exit(2)
}
let (untracedStore, shutdown) = makeStore(options)
let baseStore: any DurableOperationStore
if let fault = options["die"]?.first.flatMap(Fault.init(rawValue:)), let kind = options["die-with"]?.first {
    baseStore = dying(untracedStore, at: fault, kind: kind)
} else {
    baseStore = untracedStore
}
let store = TracingStore(baseStore)
var configuration = DurableWorker.Configuration()
configuration.name = options["name"]?.first ?? "worker"
if let milliseconds = options["shutdown-deadline-ms"]?.first.flatMap(Int.init) {
    configuration.shutdownDeadline = .milliseconds(milliseconds)
}
let worker = DurableWorker(
    store: store, queues: options["queue"] ?? ["default"], kinds: allTestKinds,
    concurrency: options["concurrency"]?.first.flatMap(Int.init) ?? 4, configuration: configuration)
FileHandle.standardOutput.write(Data("worker \(worker.id) started\n".utf8))
do {
    if options["plain"]?.first == "1" {
        try await worker.run()
        FileHandle.standardOutput.write(Data("worker \(worker.id) stopped\n".utf8))
    } else {
        let group = ServiceGroup(
            services: [worker], gracefulShutdownSignals: [.sigterm], logger: Logger(label: "durable-test-worker"))
        try await group.run()
    }
} catch {
    FileHandle.standardError.write(Data("worker \(worker.id): \(error)\n".utf8))
    await shutdown()
    exit(1)
}
await shutdown()
#endif
