// A kind of work that a durable queue stores and a worker runs.
#if Durable

import Foundation
@_spi(Engine) import Operations

/// A registered kind of work: its input is stored in the database, a worker that knows the
/// kind runs it, and its output is stored for whoever waits for it.
///
/// ```swift
/// struct Resize: DurableOperation {
///     static let kind = "resize"
///     func run(_ input: ResizeInput, context: DurableContext) async throws -> ImageReference { … }
/// }
/// ```
///
/// - Important: A body may run more than once (see <doc:DurableOperations>): make it
///   idempotent, or use `context.attempt` to tell a retry from a first run.
public protocol DurableOperation: Sendable {
    /// The stable name stored with each operation of this kind; never change it while
    /// operations of the kind are stored.
    static var kind: String { get }
    associatedtype Input: Codable & Sendable
    associatedtype Output: Codable & Sendable
    /// Runs one attempt.
    func run(_ input: Input, context: DurableContext) async throws -> Output
}

/// What a running body knows about its operation, and how it reaches the store.
public struct DurableContext: Sendable {
    /// The operation's identifier.
    public let id: DurableOperationID
    /// The attempt being run: 1 for the first.
    public let attempt: Int
    /// The operations it depends on, each once, in the order they were stored.
    public let dependencies: [DurableOperationID]
    let store: any DurableOperationStore
    let cancellation: DurableCancellationFlag

    init(
        id: DurableOperationID, attempt: Int, dependencies: [DurableOperationID] = [], store: any DurableOperationStore,
        cancellation: DurableCancellationFlag
    ) {
        self.id = id
        self.attempt = attempt
        self.dependencies = dependencies
        self.store = store
        self.cancellation = cancellation
    }

    /// Whether the operation was cancelled (from any machine) or the worker is giving it back.
    public var isCancelled: Bool { Task.isCancelled || cancellation.reason != nil }

    /// Throws `CancellationError` when ``isCancelled`` is true.
    public func checkCancellation() throws {
        if isCancelled { throw CancellationError() }
    }

    /// Stores the body's progress; ``DurableHandle/progress`` reads it.
    public func reportProgress(completed: Int64, total: Int64) async throws {
        try await store.reportProgress(of: id, attempt: attempt, completed: completed, total: total)
    }

    /// The output of a dependency (or of any operation that succeeded).
    ///
    /// Throws ``DurableError`` when that operation did not succeed.
    public func output<K: DurableOperation>(of handle: DurableHandle<K>) async throws -> K.Output {
        try await DurableHandle<K>(id: handle.id, store: store).finishedOutput()
    }

    /// The outputs of its dependencies of kind `K`, each once, in the order the operations
    /// were stored (a member whose key coalesced stands at the place of the operation it
    /// coalesced with): how a member of a ``DurableBatch`` reads what the members it depends
    /// on produced.
    ///
    /// Throws ``DurableError`` when one of them did not succeed.
    public func outputs<K: DurableOperation>(of kind: K.Type) async throws -> [K.Output] {
        var outputs: [K.Output] = []
        for dependency in dependencies {
            guard let record = try await store.record(of: dependency, includingAttempts: false) else {
                throw DurableError(.notFound, "\(dependency), a dependency of \(id), is not stored: pruned")
            }
            guard record.kind == K.kind else { continue }
            outputs.append(try await DurableHandle<K>(id: dependency, store: store).finishedOutput())
        }
        return outputs
    }
}

/// The reason a running operation was asked to stop, set once.
final class DurableCancellationFlag: Sendable {
    private let storage = Locked<String?>(nil)

    var reason: String? { storage.withLock { $0 } }

    /// Sets the reason unless one is set; returns whether it was set now.
    @discardableResult
    func set(_ reason: String) -> Bool {
        storage.withLock { value in
            guard value == nil else { return false }
            value = reason
            return true
        }
    }
}
#endif
