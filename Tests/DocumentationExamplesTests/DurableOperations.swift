// Sources/OperationsDurable/OperationsDurable.docc/DurableOperations.md (with the
// PostgreSQL trait).
#if PostgreSQL

import Operations
import OperationsDurable
import OperationsPostgres
import ServiceLifecycle
import Logging

/// What the blocks use from the article's story: the work itself, a source and a destination.
private func fetch(_ url: URL) async throws -> Data { Data() }
private func sepia(_ image: Data) -> Data { image }
private func write(_ image: Data, to path: String) throws {}
private func sheet(_ title: String, _ images: [Data]) -> Data { Data() }
private let url = URL(string: "https://example.com/cat.jpg")!
private let path = "cat-sepia.jpg"
private let urls = [url]

private struct HTTPServer: Service {
    func run() async throws {}
}

func durableOperationsOnAnOperationQueue() {
let queue = OperationQueue()
let download = AsyncBlockOperation { try await fetch(url) }
let filter = download.then { data in sepia(data) }      // runs after download, with its value
let output = filter.then { image in try write(image, to: path) }
queue.addOperations([download, filter, output], waitUntilFinished: false)
}

func durableOperationsOverview() async throws {
struct Download: DurableOperation {
    static let kind = "download"
    func run(_ url: URL, context: DurableContext) async throws -> Data { try await fetch(url) }
}
struct Filter: DurableOperation {
    static let kind = "filter"
    func run(_ download: DurableHandle<Download>, context: DurableContext) async throws -> Data {
        sepia(try await context.output(of: download))
    }
}
struct OutputInput: Codable, Sendable {
    var filtered: DurableHandle<Filter>
    var path: String
}
struct Output: DurableOperation {
    static let kind = "output"
    func run(_ input: OutputInput, context: DurableContext) async throws -> String {
        try write(try await context.output(of: input.filtered), to: input.path)
        return input.path
    }
}

let store = PostgresOperationStore(configuration: .init(host: "db", username: "app"))
// or: PostgresOperationStore(configuration: try .init(url: "postgres://app@db:5432/images"))
try await store.migrate()
let queue = DurableQueue(name: "images", store: store)
let download = try await queue.add(Download.self, input: url)
let filter = try await queue.add(Filter.self, input: download, dependencies: [download])
let output = try await queue.add(Output.self, input: .init(filtered: filter, path: path), dependencies: [filter])
let written = try await output.value
_ = written
}

func durableOperationsWorker(store: PostgresOperationStore) async throws {
let worker = DurableWorker(store: store, queues: ["images"], kinds: [Download(), Filter(), Output()])
try await worker.run()          // returns after SIGTERM or SIGINT, once what ran is given back
}

func durableOperationsServiceGroup(worker: DurableWorker, logger: Logger) async throws {
let httpServer = HTTPServer()
let group = ServiceGroup(
    services: [worker, httpServer], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
try await group.run()           // the group's graceful shutdown stops the worker the same way
}

func durableOperationsBatch(queue: DurableQueue) async throws {
struct Contact: DurableOperation {
    static let kind = "contact-sheet"
    func run(_ title: String, context: DurableContext) async throws -> Data {
        // The outputs of the downloads it depends on, in the order they were stored.
        sheet(title, try await context.outputs(of: Download.self))
    }
}

var batch = DurableBatch()
let downloads = try urls.map { try batch.add(Download.self, input: $0) }
let contactSheet = try batch.add(Contact.self, input: "holiday", dependencies: downloads)
let added = try await queue.addOperations(batch)
let data = try await added[contactSheet].value
_ = data
}

#endif
