// Many operations added in one round trip, with dependencies among them.
#if Durable

import Foundation
import Operations

/// Operations to add together with ``DurableQueue/addOperations(_:waitUntilFinished:)``: one
/// round trip and one transaction for all of them, which may depend on each other.
///
/// ```swift
/// var batch = DurableBatch()
/// let fetch = try batch.add(Fetch.self, input: url)
/// let resize = try batch.add(Resize.self, input: 640, dependencies: [fetch])
/// let added = try await queue.addOperations(batch)
/// let thumbnail = try await added[resize].value
/// ```
public struct DurableBatch: Sendable {
    /// An operation of the batch, before it is stored: a dependency of later members, and the
    /// key to its handle once added.
    public struct Member<K: DurableOperation>: Sendable, Hashable, DurableBatchDependency {
        /// Its position in the batch.
        public let index: Int
        /// The batch it belongs to.
        let batch: UInt64
        public var batchTarget: DurableBatchTarget { .member(index, batch: batch) }
    }

    var requests: [DurableEnqueueRequest] = []
    /// Tells this batch's members from another's.
    let identity = UInt64.random(in: 1...UInt64.max)

    public init() {}

    /// How many operations the batch holds.
    public var count: Int { requests.count }
    public var isEmpty: Bool { requests.isEmpty }

    /// Adds an operation of kind `K` to the batch; the parameters are those of
    /// ``DurableQueue/add(_:input:dependencies:runsAnyway:priority:key:notBefore:retry:)``.
    /// `dependencies` may name members added before this one, handles and ids.
    ///
    /// A member whose `key` coalesces with a pending operation stands for that operation:
    /// its dependents in the batch depend on it.
    @discardableResult
    public mutating func add<K: DurableOperation>(
        _ kind: K.Type, input: K.Input, dependencies: [any DurableBatchDependency] = [], runsAnyway: Bool = false,
        priority: Operations.Operation.QueuePriority = .normal, key: String? = nil, notBefore: Date? = nil,
        retry: DurableRetry = .standard
    ) throws -> Member<K> {
        let index = requests.count
        let what = "adding \(K.kind) as member \(index) of a batch"
        var stored: [DurableOperationID] = []
        var members: [Int] = []
        for dependency in dependencies {
            switch dependency.batchTarget {
            case .stored(let id):
                stored.append(id)
            case .member(let member, let batch):
                guard batch == identity, member < index, member >= 0 else {
                    throw DurableError(
                        .invalidArgument, "\(what): it depends on member \(member)\(batch == identity ? "" : " of another batch"), which is not an earlier member of this batch")
                }
                members.append(member)
            }
        }
        requests.append(
            try DurableQueue.storedRequest(
                kind, input: input, queue: "", what: what, dependencies: stored, dependenciesInBatch: members,
                runsAnyway: runsAnyway, priority: priority, key: key, notBefore: notBefore, retry: retry))
        return Member(index: index, batch: identity)
    }

    /// The handles of a batch's operations once added.
    public struct Added: Sendable {
        /// What the store did with each member, in the batch's order.
        public let results: [DurableEnqueueResult]
        let store: any DurableOperationStore
        let events: DurableHandleEvents
        let batch: UInt64

        /// The handle of a member (of an operation with the same key, if it coalesced).
        /// - Precondition: `member` was added to the batch these operations came from.
        public subscript<K: DurableOperation>(member: Member<K>) -> DurableHandle<K> {
            precondition(
                member.batch == batch && results.indices.contains(member.index),
                "DurableBatch.Added: member \(member.index) (\(K.kind)) belongs to another batch")
            return DurableHandle(id: results[member.index].id, store: store, events: events)
        }

        /// The ids of the stored operations, in the batch's order.
        public var ids: [DurableOperationID] { results.map(\.id) }
    }
}

/// What a member of a batch depends on: an operation already stored, or an earlier member.
public enum DurableBatchTarget: Sendable, Hashable {
    case stored(DurableOperationID)
    /// The member at a position of the batch that `batch` identifies.
    case member(Int, batch: UInt64)
}

/// Something a member of a ``DurableBatch`` can depend on: a handle, an id, or an earlier
/// member of the batch.
public protocol DurableBatchDependency: Sendable {
    var batchTarget: DurableBatchTarget { get }
}

extension DurableHandle: DurableBatchDependency {
    public var batchTarget: DurableBatchTarget { .stored(id) }
}

extension DurableOperationID: DurableBatchDependency {
    public var batchTarget: DurableBatchTarget { .stored(self) }
}
#endif
