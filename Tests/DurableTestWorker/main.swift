// A worker process for the multi-process durable tests:
// DurableTestWorker (--port P [--database D] | --sqlite PATH) --name N [--queue Q]… [--concurrency C]
//     [--die after-claim|before-completion --die-with KIND] [--plain RUNS] [--shutdown-deadline-ms MS]
// Stops gracefully on SIGTERM; the tests also kill it with SIGKILL. With `--plain RUNS` it runs
// the worker without a ServiceGroup, as `try await worker.run()` (RUNS times in a row).
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
let (queues, concurrency) = (options["queue"] ?? ["default"], options["concurrency"]?.first.flatMap(Int.init) ?? 4)
/// A worker on the store, new for each run.
@MainActor func makeWorker() -> DurableWorker {
    DurableWorker(store: store, queues: queues, kinds: allTestKinds, concurrency: concurrency, configuration: configuration)
}
do {
    if let runs = options["plain"]?.first.flatMap(Int.init) {
        for _ in 0..<runs {
            let worker = makeWorker()
            FileHandle.standardOutput.write(Data("worker \(worker.id) started\n".utf8))
            try await worker.run()
            FileHandle.standardOutput.write(Data("worker \(worker.id) stopped\n".utf8))
        }
    } else {
        let worker = makeWorker()
        FileHandle.standardOutput.write(Data("worker \(worker.id) started\n".utf8))
        let group = ServiceGroup(
            services: [worker], gracefulShutdownSignals: [.sigterm], logger: Logger(label: "durable-test-worker"))
        try await group.run()
        FileHandle.standardOutput.write(Data("worker \(worker.id) stopped\n".utf8))
    }
} catch {
    FileHandle.standardError.write(Data("worker: \(error)\n".utf8))
    await shutdown()
    exit(1)
}
await shutdown()
#endif
