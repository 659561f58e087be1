// Sources/OperationsDashboard/OperationsDashboard.docc/Dashboard.md (with the Dashboard
// trait).
#if Dashboard

import OperationsDashboard
import OperationsDurable
import OperationsSQLite
import ServiceLifecycle
import Logging

import Operations

/// The kind of work the article's first block names.
private struct Thumbnail: DurableOperation {
    static let kind = "thumbnail"
    func run(_ path: String, context: DurableContext) async throws -> String { path + ".thumbnail.png" }
}

func dashboardBesideAWorker() async throws {
let store = SQLiteOperationStore(path: "pipeline.sqlite")
try await store.migrate()
let worker = DurableWorker(store: store, queues: ["images"], kinds: [Thumbnail()])
let dashboard = OperationsDashboard(store: store)      // http://127.0.0.1:8080, read-only
let group = ServiceGroup(
    services: [worker, dashboard], gracefulShutdownSignals: [.sigterm, .sigint], logger: Logger(label: "images"))
try await group.run()                                  // SIGTERM or SIGINT stops both
}

func dashboardStartAndStop() async throws {
let queue = OperationQueue()
queue.name = "thumbnails"
queue.maxConcurrentOperationCount = 4

let dashboard = OperationsDashboard(configuration: .init(port: 0))   // port 0: a free one
dashboard.watch(queue)
let url = try await dashboard.start()
print("dashboard at \(url)")
// … while the process runs …
await dashboard.stop()
}

func dashboardWithAToken(store: SQLiteOperationStore) -> OperationsDashboard {
let token = ProcessInfo.processInfo.environment["DASHBOARD_TOKEN"]   // nil: read-only
let dashboard = OperationsDashboard(store: store, storeName: "images", configuration: .init(actionToken: token))
return dashboard
}

func dashboardConfiguration() -> OperationsDashboard.Configuration {
let configuration = OperationsDashboard.Configuration(
    refreshInterval: .seconds(10),       // one set of reads every 10 s at most
    finishedWindow: .seconds(15 * 60))   // finished counts and failures of the last 15 minutes
return configuration
}

#endif
