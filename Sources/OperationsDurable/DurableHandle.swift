// A typed reference to a stored operation.
#if Durable

import Foundation

/// A stored operation of kind `K`: wait for its output, read its outcome and attempts,
/// cancel it.
///
/// A handle is `Codable` (only its id is encoded), so it can be part of another operation's
/// input; a body reads such a dependency's output with ``DurableContext/output(of:)``.
public struct DurableHandle<K: DurableOperation>: Sendable, Codable, Hashable {
    public let id: DurableOperationID
    let store: (any DurableOperationStore)?
    /// Where its cancels are reported: the queue that made it, if one did.
    let events: DurableHandleEvents?

    init(id: DurableOperationID, store: (any DurableOperationStore)?, events: DurableHandleEvents? = nil) {
        self.id = id
        self.store = store
        self.events = events
    }

    public init(from decoder: any Decoder) throws {
        id = try DurableOperationID(from: decoder)
        store = nil
        events = nil
    }

    public func encode(to encoder: any Encoder) throws { try id.encode(to: encoder) }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.id == rhs.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    /// How a finished operation ended.
    public enum Outcome: Sendable, Equatable {
        case succeeded
        case failed(String)
        case cancelled(String)
    }

    func boundStore() throws -> any DurableOperationStore {
        guard let store else {
            throw DurableError(.handleNotBound, "\(id) (\(K.kind)): this handle was decoded and has no store; use DurableContext.output(of:) or DurableQueue.handle(_:id:)")
        }
        return store
    }

    func currentRecord(attempts: Bool = false) async throws -> DurableRecord {
        guard let record = try await boundStore().record(of: id, includingAttempts: attempts) else {
            throw DurableError(.notFound, "\(id) (\(K.kind)) is not stored: never added, or pruned")
        }
        return record
    }

    /// The output of a finished operation; throws when it did not succeed.
    func finishedOutput() async throws -> K.Output {
        let record = try await currentRecord()
        return try decodeOutput(record)
    }

    private func decodeOutput(_ record: DurableRecord) throws -> K.Output {
        switch record.state {
        case .succeeded:
            do {
                return try JSONDecoder().decode(K.Output.self, from: Data((record.output ?? "null").utf8))
            } catch {
                throw DurableError(.invalidArgument, "\(id) (\(K.kind)): its stored output does not decode as \(K.Output.self): \(error)")
            }
        case .failed:
            throw DurableError(.operationFailed, "\(id) (\(K.kind)) failed: \(record.error ?? "no error recorded")")
        case .cancelled:
            throw DurableError(.operationCancelled, "\(id) (\(K.kind)) was cancelled: \(record.cancelReason ?? "no reason given")")
        case .waiting, .ready, .running:
            throw DurableError(.invalidArgument, "\(id) (\(K.kind)) has not finished (\(record.state.rawValue))")
        }
    }

    /// The output, once the operation finishes; throws ``DurableError`` when it failed or was
    /// cancelled.
    ///
    /// Waits through the store's ``DurableFinishWatch``: the process listens once for all its
    /// waiters, a finish wakes only the waiters of its own operation, and the records of the
    /// awaited operations are read together, so awaiting many handles at once costs each a
    /// share of a few reads. Cancelling the waiting task
    /// stops the wait, not the operation.
    public var value: K.Output {
        get async throws {
            let store = try boundStore()
            let record: DurableRecord
            do {
                record = try await store.finishWatch.finishedRecord(of: id, store: store)
            } catch let error as DurableError where error.code == .notFound {
                throw DurableError(.notFound, "\(id) (\(K.kind)) is not stored: never added, or pruned")
            }
            return try decodeOutput(record)
        }
    }

    /// How it ended, or `nil` while it has not finished.
    public var outcome: Outcome? {
        get async throws {
            let record = try await currentRecord()
            switch record.state {
            case .succeeded: return .succeeded
            case .failed: return .failed(record.error ?? "")
            case .cancelled: return .cancelled(record.cancelReason ?? "")
            case .waiting, .ready, .running: return nil
            }
        }
    }

    /// Where it is in its life.
    public var state: DurableState {
        get async throws { try await currentRecord().state }
    }

    /// Every recorded run of its body, oldest first.
    public var attempts: [DurableAttempt] {
        get async throws { try await currentRecord(attempts: true).attempts }
    }

    /// The progress its body last reported.
    public var progress: (completed: Int64, total: Int64) {
        get async throws {
            let record = try await currentRecord()
            return (record.progressCompleted, record.progressTotal)
        }
    }

    /// Cancels it: at once if it has not started (its dependents are cancelled with the
    /// reason); a running body is asked to stop through the store, on whatever machine.
    ///
    /// Reported as a `cancelled` ``DurableEvent`` by the queue that made this handle.
    public func cancel(reason: String = "cancelled") async throws {
        try await boundStore().cancel(id, reason: reason)
        if let events {
            events.broadcaster.report(DurableEvent.Draft(
                kind: .cancelled, operation: id, operationKind: K.kind, queue: events.queue, error: reason))
        }
    }

    /// Why it is not running, in a sentence.
    public var waitDescription: String {
        get async throws {
            guard let facts = try await boundStore().waitFacts(of: id) else {
                throw DurableError(.notFound, "\(id) (\(K.kind)) is not stored: never added, or pruned")
            }
            return DurableWaitDescription.describe(facts)
        }
    }
}

/// The queue a handle reports its cancels to.
struct DurableHandleEvents: Sendable {
    let broadcaster: DurableEventBroadcaster
    let queue: String
}
#endif
