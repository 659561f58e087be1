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
/// is cancelled (see ``ValueOperation/value``), and ends after the last value.
///
/// Made by ``OperationQueue/results(adding:)``, the sequence owns the batch: leaving the
/// loop early (a `break`, a thrown error) or cancelling the iterating task cancels the
/// operations that have not finished. Made by ``init(_:)`` over operations added elsewhere,
/// it only watches them.
public struct OperationResults<Success: Sendable>: AsyncSequence, Sendable {
    public typealias Element = Success
    public typealias Failure = any Error

    private let operations: [ValueOperation<Success>]
    private let cancelsOnExit: Bool

    /// Watches `operations` (added to queues elsewhere) and yields their values as they
    /// finish. Leaving the loop early does not cancel them.
    public init(_ operations: [ValueOperation<Success>]) {
        self.init(operations, cancelsOnExit: false)
    }

    init(_ operations: [ValueOperation<Success>], cancelsOnExit: Bool) {
        self.operations = operations
        self.cancelsOnExit = cancelsOnExit
    }

    public func makeAsyncIterator() -> AsyncIterator {
        // Bounded by the batch: every operation yields at most one element.
        let (stream, continuation) = AsyncThrowingStream<Success, any Error>.makeStream()
        let remaining = Locked(operations.count)
        if operations.isEmpty { continuation.finish() }
        for operation in operations {
            operation._onFinish { [continuation] _ in
                switch operation.result! {
                case .success(let value): continuation.yield(value)
                case .failure(let error): continuation.finish(throwing: error)
                }
                let left = remaining.withLock { count in
                    count -= 1
                    return count
                }
                if left == 0 { continuation.finish() }
            }
        }
        if cancelsOnExit {
            let operations = operations
            continuation.onTermination = { _ in
                for operation in operations where !operation.isFinished { operation.cancel() }
            }
        }
        return AsyncIterator(base: stream.makeAsyncIterator())
    }

    /// Yields the next value in finishing order.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<Success, any Error>.AsyncIterator

        public mutating func next() async throws -> Success? {
            try await base.next()
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(any Error) -> Success? {
            try await base.next(isolation: actor)
        }
    }
}

extension OperationQueue {
    /// Adds the operations and returns their values in the order they finish.
    ///
    /// The sequence owns the batch: leaving the loop early (a `break`, a thrown error) or
    /// cancelling the iterating task cancels the operations that have not finished.
    public func results<Success: Sendable>(adding operations: [ValueOperation<Success>]) -> OperationResults<Success> {
        addOperations(operations, waitUntilFinished: false)
        return OperationResults(operations, cancelsOnExit: true)
    }
}
