// Sources/OperationsComposition/OperationsComposition.docc/GroupOperations.md

import OperationsComposition
import Operations

func groupOperationsOverview(queue: OperationQueue, download: Operation, resize: Operation, upload: Operation) async {
let group = GroupOperation(operations: [download, resize])
group.maxConcurrentChildCount = 2
group.addChild(upload)                 // also while it runs, also from a child
queue.addOperation(group)              // a group is an Operation: dependencies, priorities…
await group.waitUntilFinished()
}

func groupOperationsValues(
    queue: OperationQueue, urls: [URL], thumbnail: @escaping @Sendable (URL) async throws -> Data
) async throws {
let thumbnails = ValueGroupOperation(urls.map { url in AsyncBlockOperation { try await thumbnail(url) } })
queue.addOperation(thumbnails)
let images = try await thumbnails.values
_ = images
}
