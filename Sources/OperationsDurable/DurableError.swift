// Errors of the durable layer.
#if Durable

/// An error of the durable layer: a code that can grow, and a message naming what failed.
public struct DurableError: Error, CustomStringConvertible, Sendable, Equatable {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Value: String { case failed, cancelled, notFound, invalidArgument, databaseUnreachable, schemaTooNew, notBound, wrongStore, databaseError }
        fileprivate let value: Value

        /// The awaited operation failed.
        public static let operationFailed = Code(value: .failed)
        /// The awaited operation was cancelled.
        public static let operationCancelled = Code(value: .cancelled)
        /// No such operation is stored (never was, or it was pruned).
        public static let notFound = Code(value: .notFound)
        /// An argument breaks a rule (the message names it).
        public static let invalidArgument = Code(value: .invalidArgument)
        /// The database could not be reached.
        public static let databaseUnreachable = Code(value: .databaseUnreachable)
        /// The database refused a statement (the message has its words).
        public static let databaseError = Code(value: .databaseError)
        /// The database's schema is newer than this library.
        public static let schemaTooNew = Code(value: .schemaTooNew)
        /// A handle decoded from an input has no store: use `DurableContext.output(of:)`.
        public static let handleNotBound = Code(value: .notBound)
        /// The queue's store is not of the kind this call needs.
        public static let wrongStore = Code(value: .wrongStore)

        public var description: String { value.rawValue }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

extension DurableEnqueueRequest {
    /// Refuses to coalesce with `existing`, of `existingKind`, when that is not this
    /// request's kind: a handle of this kind would read another kind's output.
    package func checkCoalescing(with existing: DurableOperationID, of existingKind: String) throws {
        guard existingKind != kind, let key else { return }
        throw DurableError(
            .invalidArgument,
            "adding \(kind) to queue \"\(queue)\" with key \"\(key)\": the key is held by operation \(existing.rawValue), of kind \(existingKind), which is pending or running; a key coalesces operations of one kind")
    }
}
#endif
