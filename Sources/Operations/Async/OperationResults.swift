/// The values of a batch of typed operations, in the order they finish: TaskGroup's
/// `for try await` pattern, bounded by the queue's limit and ordered by its priorities.
///
/// ```swift
/// for try await image in queue.results(adding: downloads) {
///     show(image)
/// }
/// ```
///
/// Iteration throws the error of the first operation (in finishing order) that fails or
/// is cancelled (see ``ValueOperation/value``), and ends after the last value. When the
/// iterating task is cancelled it throws `CancellationError`, so a loop cut short never
/// reads as a complete batch.
///
/// Made by ``OperationQueue/results(adding:)``, the sequence owns the batch: leaving the
/// loop early (a `break`, a thrown error) or cancelling the iterating task cancels the
/// operations that have not finished, as one step, and with them the upstream of `then`
/// and `combine` stages that nobody else wants (see ``ValueOperation``). Made by ``init(_:)`` over operations added elsewhere,
/// it only watches them.
///
/// A loop waiting for operations that cannot make progress says so once, through
/// ``OperationDiagnostic/handler`` (see ``OperationDiagnostic/stallReportDelay``).
///
/// - Note: In top-level code (`main.swift`) a loop's iterator lives until the program ends,
///   so a `break` there does not count as leaving: cancel the operations yourself.
public struct OperationResults<Success: Sendable>: AsyncSequence, Sendable {
    public typealias Element = Success
    public typealias Failure = any Error

    private let operations: [ValueOperation<Success>]
    private let cancelsOnExit: Bool
    /// The queue `results(adding:)` added them to, for stall reports.
    private let queue: OperationQueue?

    /// Watches `operations` (added to queues elsewhere) and yields their values as they
    /// finish. Leaving the loop early does not cancel them.
    public init(_ operations: [ValueOperation<Success>]) {
        self.init(operations, cancelsOnExit: false, queue: nil)
    }

    init(_ operations: [ValueOperation<Success>], cancelsOnExit: Bool, queue: OperationQueue?) {
        self.operations = operations
        self.cancelsOnExit = cancelsOnExit
        self.queue = queue
    }

    public func makeAsyncIterator() -> AsyncIterator {
        // Bounded by the batch: every operation yields at most one element.
        let (stream, continuation) = AsyncThrowingStream<Success, any Error>.makeStream()
        let batch = Batch(remaining: operations.count)
        if operations.isEmpty { continuation.finish() }
        var hooks: [(Operation, UInt64)] = []
        for operation in operations {
            let hook = operation._onFinish(for: .caller) { [continuation] _ in
                switch operation.result! {
                case .success(let value): continuation.yield(value)
                case .failure(let error): continuation.finish(throwing: error)
                }
                if batch.remaining.withLock({ count in
                    count -= 1
                    return count
                }) == 0 {
                    continuation.finish()
                }
            }
            if let hook { hooks.append((operation, hook)) }
        }
        let operations = operations, cancelsOnExit = cancelsOnExit, hooked = hooks
        continuation.onTermination = { _ in
            // The loop is over (left, cancelled, or done): nothing more is wanted from the
            // operations that have not finished. Their hooks go, so that an operation that
            // never runs does not keep the stream alive.
            for (operation, hook) in hooked { operation._removeFinishHook(hook) }
            if cancelsOnExit {
                // As one step, so that none starts in a slot another one freed; stages that
                // are cancelled cancel the upstream nobody else wants.
                Operation.cancel(operations.filter { !$0.isFinished })
            }
        }
        return AsyncIterator(
            base: stream.makeAsyncIterator(), batch: batch, operations: operations,
            call: .awaitResults(queue, count: operations.count))
    }

    /// How many operations of the batch have not delivered yet.
    final class Batch: Sendable {
        let remaining: Locked<Int>

        init(remaining: Int) {
            self.remaining = Locked(remaining)
        }
    }

    /// Yields the next value in finishing order.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<Success, any Error>.AsyncIterator
        let batch: Batch
        /// For stall reports: what the loop waits for, and how it is described.
        let operations: [ValueOperation<Success>]
        let call: StallReport.Call
        /// How many operations' results the loop has taken.
        var taken = 0

        public mutating func next() async throws -> Success? {
            let watched = watchIfSuspending()
            defer { AsyncStallWatch.shared.end(watched) }
            guard let value = try await base.next() else { return try end() }
            taken += 1
            return value
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(any Error) -> Success? {
            let watched = watchIfSuspending()
            defer { AsyncStallWatch.shared.end(watched) }
            guard let value = try await base.next(isolation: actor) else { return try end() }
            taken += 1
            return value
        }

        /// Registers the loop with the stall watch when no result is waiting for it (every
        /// finish that was delivered was taken, and some are still to come): the common
        /// case of a result already buffered registers nothing.
        private func watchIfSuspending() -> UInt64? {
            let remaining = batch.remaining.withLock { $0 }
            guard remaining > 0, operations.count - remaining <= taken else { return nil }
            let operations = operations
            return AsyncStallWatch.shared.begin(call) { operations.filter { !$0._isFinishingFlag } }
        }

        /// The stream ended: complete, or cut short by the iterating task's cancellation,
        /// which must not read as a complete batch.
        private func end() throws -> Success? {
            if batch.remaining.withLock({ $0 }) > 0 { throw CancellationError() }
            return nil
        }
    }
}

extension OperationQueueExtensions where Self: OperationQueue {
    /// Adds the operations and returns their values in the order they finish.
    ///
    /// The sequence owns the batch: leaving the loop early (a `break`, a thrown error) or
    /// cancelling the iterating task cancels the operations that have not finished.
    public func results<Success: Sendable>(adding operations: [ValueOperation<Success>]) -> OperationResults<Success> {
        addOperations(operations, waitUntilFinished: false)
        return OperationResults(operations, cancelsOnExit: true, queue: self)
    }
}
