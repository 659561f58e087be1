extension OperationQueue {
    /// An operation of a queue that has not finished, and why it is not running (yet).
    public struct PendingOperation: Sendable {
        /// The operation.
        public let operation: Operation
        /// ``Operation/waitReasons`` when the snapshot was taken (`[.executing]` for one
        /// that runs).
        public let reasons: [Operation.WaitReason]
    }
}

extension OperationQueueExtensions where Self: OperationQueue {
    /// Every operation of the queue that has not finished, in the order added, with its
    /// wait reasons: the answer to "why is nothing happening?".
    /// - Note: A snapshot: by the time it is read, things may have moved on.
    public var pendingOperations: [OperationQueue.PendingOperation] {
        operations.map { OperationQueue.PendingOperation(operation: $0, reasons: $0.waitReasons) }
    }

    /// ``pendingOperations`` for a person: a line about the queue, then one per operation,
    /// and the operations that cannot make progress (cycles, dependencies in no queue, a
    /// suspended queue, a limit of 0), if any.
    public var waitDescription: String {
        let pending = pendingOperations
        let limit = maxConcurrentOperationCount
        let limitText = limit == OperationQueue.defaultMaxConcurrentOperationCount ? "default limit" : "maxConcurrentOperationCount \(limit)"
        let executing = pending.filter { $0.reasons == [.executing] }.count
        var lines = ["\(_misuseName) (\(limitText)\(isSuspended ? ", suspended" : "")): \(pending.count) operation\(pending.count == 1 ? "" : "s") not finished, \(executing) executing"]
        for entry in pending {
            lines.append("- " + entry.operation.waitDescription)
        }
        let stuck = StallAnalysis.stuck(among: pending.map(\.operation))
        if !stuck.isEmpty {
            lines.append("cannot make progress: " + StallAnalysis.describe(stuck, limit: 20))
        }
        return lines.joined(separator: "\n")
    }
}
