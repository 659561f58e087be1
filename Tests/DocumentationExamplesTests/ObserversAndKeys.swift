// Sources/OperationsComposition/OperationsComposition.docc/ObserversAndKeys.md

import OperationsComposition
import Operations

private func log(_ message: String) { print(message) }
private struct Metrics: Sendable {
    func record(_ operation: Operation, _ outcome: Operation.Outcome) {}
}
private let metrics = Metrics()

func observersAndKeysObservers(operation: Operation) {
operation.addObserver(BlockObserver(
    didCancel: { operation, reason in log("cancelled: \(String(describing: reason))") },
    didFinish: { operation, outcome in metrics.record(operation, outcome) }))
}

func observersAndKeysKeys(downloads: OperationQueue, url: URL, load: @escaping @Sendable (URL) async throws -> Data) async throws {
let image = downloads.addOperation(forKey: url) { AsyncBlockOperation { try await load(url) } }
downloads.setQueuePriority(.veryHigh, forKey: url)    // visible again
downloads.cancelOperation(forKey: url)                 // one interest fewer
let pixels = try await downloads.perform(forKey: url) { try await load(url) }
_ = (image, pixels)
}
