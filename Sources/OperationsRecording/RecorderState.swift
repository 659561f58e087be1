import Operations
import Synchronization

/// The events an ``OperationRecorder`` has received, behind one mutex (the recorder's
/// own: the core's `Locked` is internal to `Operations`). Nothing but appending and
/// updating happens under it; operations' getters are read before.
final class RecorderState: Sendable {
    struct Entry {
        var operation: Operation
        var recorded: Recording.Operation
    }

    struct State {
        var entries: [Entry] = []
        var index: [ObjectIdentifier: Int] = [:]
        var queues: [(queue: OperationQueue, name: String)] = []
        var subscriptions: [OperationEventSubscription] = []
        var unnamed: [String: Int] = [:]
        var isStopped = false
        var end: UInt64 = 0
    }

    let origin: UInt64
    private let state = Mutex(State())

    init(origin: UInt64) {
        self.origin = origin
    }

    func addQueue(_ queue: OperationQueue, name: String) -> Int {
        state.withLock { state in
            state.queues.append((queue, name))
            return state.queues.count - 1
        }
    }

    func keep(_ subscription: OperationEventSubscription) {
        let refused: OperationEventSubscription? = state.withLock { state in
            guard !state.isStopped else { return subscription }
            state.subscriptions.append(subscription)
            return nil
        }
        refused?.cancel()
    }

    private func time(_ eventTime: UInt64) -> UInt64 { eventTime > origin ? eventTime - origin : 0 }

    func enqueued(_ operation: Operation, name: String?, queue: Int, queueName: String, dependencies: [Operation],
                  time eventTime: UInt64, grouping: OperationRecorder.Grouping) {
        let time = time(eventTime)
        let typeName = "\(type(of: operation))"
        let group = grouping(name ?? typeName, queueName)
        let dependencyIdentities = dependencies.map(ObjectIdentifier.init)
        state.withLock { state in
            guard !state.isStopped else { return }
            let id = state.entries.count
            let displayName: String
            if let name {
                displayName = name
            } else {
                let number = state.unnamed[typeName, default: 0]
                state.unnamed[typeName] = number + 1
                displayName = "\(typeName) \(number + 1)"
            }
            let recorded = Recording.Operation(
                id: id, name: displayName, queue: queueName, queueIndex: queue, group: group, enqueued: time, started: nil, finished: nil,
                cancelled: nil, outcome: .unfinished, dependencies: dependencyIdentities.compactMap { state.index[$0] })
            state.index[ObjectIdentifier(operation)] = id
            state.entries.append(Entry(operation: operation, recorded: recorded))
            state.end = max(state.end, time)
        }
    }

    func record(_ event: OperationEvent) {
        let time = time(event.time)
        // The outcome is decided by the time the finished event is delivered.
        let outcome: Recording.Outcome? = if case .finished = event.kind { Self.outcome(of: event.operation) } else { nil }
        state.withLock { state in
            guard !state.isStopped, let id = state.index[ObjectIdentifier(event.operation)] else { return }
            state.end = max(state.end, time)
            switch event.kind {
            case .enqueued: break
            case .started: state.entries[id].recorded.started = time
            case .cancelled: state.entries[id].recorded.cancelled = time
            case .finished:
                state.entries[id].recorded.finished = time
                state.entries[id].recorded.outcome = outcome ?? .unfinished
            }
        }
    }

    static func outcome(of operation: Operation) -> Recording.Outcome? {
        switch operation.outcome {
        case nil: nil
        case .succeeded: .succeeded
        case .cancelled(let reason): .cancelled(reason: reason.map { "\($0)" })
        case .failed(let error): .failed(error: "\(error)")
        }
    }

    func stop(title: String) -> Recording {
        let (entries, queues, subscriptions, end) = state.withLock { state in
            defer {
                state.isStopped = true
                state.entries = []
                state.index = [:]
                state.queues = []
                state.subscriptions = []
            }
            return (state.entries, state.queues, state.subscriptions, state.end)
        }
        for subscription in subscriptions { subscription.cancel() }
        // Dependencies added after an operation was enqueued (or to operations enqueued
        // before their dependencies) are read again now, with no lock held.
        var index: [ObjectIdentifier: Int] = [:]
        for entry in entries { index[ObjectIdentifier(entry.operation)] = entry.recorded.id }
        var operations = entries.map(\.recorded)
        for entry in entries {
            let now = entry.operation.dependencies.compactMap { index[ObjectIdentifier($0)] }
            operations[entry.recorded.id].dependencies = now.isEmpty ? operations[entry.recorded.id].dependencies : now
        }
        let recordedQueues = queues.enumerated().map { index, entry in
            Recording.Queue(
                name: entry.name, maxConcurrentOperationCount: entry.queue.maxConcurrentOperationCount,
                mostConcurrent: Self.mostConcurrent(operations.filter { $0.queueIndex == index }))
        }
        return Recording(title: title, operations: operations, queues: recordedQueues, duration: max(end, 1))
    }

    static func mostConcurrent(_ operations: [Recording.Operation]) -> Int {
        var changes: [(UInt64, Int)] = []
        for operation in operations where operation.runningTime != nil {
            changes.append((operation.started!, 1))
            changes.append((operation.finished!, -1))
        }
        // At equal times, finishes first: back-to-back operations did not overlap.
        changes.sort { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
        var now = 0, most = 0
        for (_, change) in changes {
            now += change
            most = max(most, now)
        }
        return most
    }
}
