// Sources/Operations/Operations.docc/UsingOperationsWithAsyncAwait.md

import Operations
#if canImport(FoundationNetworking)
import FoundationNetworking                         // URLSession on Linux
#endif

func usingOperationsWithAsyncAwaitOverview() async throws {
let urls = (1...100).map { URL(string: "https://example.com/pages/\($0)")! }
let downloads = OperationQueue()
downloads.maxConcurrentOperationCount = 4           // at most 4 bodies in flight
let parsers = OperationQueue()                      // CPU work

let pages = urls.map { url in
    let download = AsyncBlockOperation { try await URLSession.shared.data(from: url).0 }
    let parse = download.then { data in String(decoding: data, as: UTF8.self) }   // runs after download
    downloads.addOperation(download)
    parsers.addOperation(parse)
    return parse
}
let firstPage = try await pages[0].value
_ = firstPage
}

func usingOperationsWithAsyncAwaitBackPressure(
    queue: OperationQueue, hugeSequence: some Sequence<Int>, process: @escaping @Sendable (Int) async throws -> Void
) async throws {
queue.capacity = 64
for item in hugeSequence {
    try await queue.enqueue { try await process(item) }
}
}
