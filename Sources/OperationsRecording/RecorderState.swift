@_spi(Engine) import Operations

/// The events an ``OperationRecorder`` has received, behind the library's lock (`Locked`).
/// Nothing but appending and updating happens under it; operations' getters are read
/// after ``stop(title:grouping:)`` took everything out.
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
        /// Parts of operations, by the operation they belong to (kept alive, like the
        /// entries', so that its identifier names no other operation until the stop).
        var parts: [ObjectIdentifier: (operation: Operation, parts: [Recording.Part])] = [:]
        var isStopped = false
        var end: UInt64 = 0
    }

    let origin: UInt64
    private let state = Locked(State())

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

    /// An operation was added: only its time and identity are taken here (the queue's
    /// thread waits for this handler); its name and dependencies are read at ``stop(title:grouping:)``.
    /// An event of a recorded queue. The first event that names an operation makes its
    /// entry (normally `.enqueued`; for one already in the queue when recording started,
    /// whichever comes first, its time standing for the enqueueing); later ones set times.
    /// Only a time and an identity are taken here (the queue's thread waits for this
    /// handler); names and dependencies are read at ``stop(title:grouping:)``.
    func record(_ event: OperationEvent, queue: Int, queueName: String) {
        let time = time(event.time)
        state.withLock { state in
            guard !state.isStopped else { return }
            let id = Self.entry(for: event.operation, queue: queue, queueName: queueName, time: time, in: &state)
            state.end = max(state.end, time)
            switch event.kind {
            case .enqueued: break
            case .started: state.entries[id].recorded.started = time
            case .cancelled: state.entries[id].recorded.cancelled = time
            case .finished: state.entries[id].recorded.finished = time
            }
        }
    }

    /// A stretch of work inside `operation`, timed by its caller.
    func recordPart(_ name: String, of operation: Operation, started: UInt64, finished: UInt64) {
        let part = Recording.Part(name: name, started: time(started), finished: time(finished))
        state.withLock { state in
            guard !state.isStopped else { return }
            state.parts[ObjectIdentifier(operation), default: (operation, [])].parts.append(part)
            state.end = max(state.end, part.finished)
        }
    }

    /// An operation found in a queue when its recording started: entered unless an event
    /// entered it already.
    func found(_ operation: Operation, queue: Int, queueName: String, time eventTime: UInt64) {
        let time = time(eventTime)
        state.withLock { state in
            guard !state.isStopped else { return }
            _ = Self.entry(for: operation, queue: queue, queueName: queueName, time: time, in: &state)
        }
    }

    private static func entry(for operation: Operation, queue: Int, queueName: String, time: UInt64, in state: inout State) -> Int {
        if let id = state.index[ObjectIdentifier(operation)] { return id }
        let id = state.entries.count
        let recorded = Recording.Operation(
            id: id, name: "", queue: queueName, queueIndex: queue, group: "", enqueued: time, started: nil, finished: nil,
            cancelled: nil, outcome: .unfinished, dependencies: [])
        state.index[ObjectIdentifier(operation)] = id
        state.entries.append(Entry(operation: operation, recorded: recorded))
        state.end = max(state.end, time)
        return id
    }

    static func outcome(of operation: Operation) -> Recording.Outcome? {
        switch operation.outcome {
        case nil: nil
        case .succeeded: .succeeded
        case .cancelled(let reason): .cancelled(reason: reason.map { "\($0)" })
        case .failed(let error): .failed(error: "\(error)")
        }
    }

    func stop(title: String, grouping: OperationRecorder.Grouping) -> Recording {
        let (entries, queues, subscriptions, parts, end) = state.withLock { state in
            defer {
                state.isStopped = true
                state.entries = []
                state.index = [:]
                state.queues = []
                state.subscriptions = []
                state.parts = [:]
            }
            return (state.entries, state.queues, state.subscriptions, state.parts, state.end)
        }
        for subscription in subscriptions { subscription.cancel() }
        // Names, groups and dependencies are read now, with no lock held (the getters may
        // be user code), from the operations kept alive until here.
        var index: [ObjectIdentifier: Int] = [:]
        for entry in entries { index[ObjectIdentifier(entry.operation)] = entry.recorded.id }
        var unnamed: [String: Int] = [:]
        var groups: [String: String] = [:]
        let operations = entries.map { entry -> Recording.Operation in
            var recorded = entry.recorded
            let name: String
            if let given = entry.operation.name {
                name = given
            } else {
                let type = "\(type(of: entry.operation))"
                unnamed[type, default: 0] += 1
                name = "\(type) \(unnamed[type]!)"
            }
            let key = name + "\u{0}" + recorded.queue
            let group = groups[key] ?? grouping(name, recorded.queue)
            groups[key] = group
            recorded.name = name
            recorded.group = group
            recorded.dependencies = entry.operation.dependencies.compactMap { index[ObjectIdentifier($0)] }
            recorded.parts = (parts[ObjectIdentifier(entry.operation)]?.parts ?? []).sorted { $0.started < $1.started }
            if recorded.finished != nil { recorded.outcome = Self.outcome(of: entry.operation) ?? .unfinished }
            return recorded
        }
        let recordedQueues = queues.enumerated().map { index, entry in
            Recording.Queue(
                name: entry.name, maxConcurrentOperationCount: entry.queue.maxConcurrentOperationCount,
                mostConcurrent: Self.mostConcurrent(operations.filter { $0.queueIndex == index }),
                group: grouping(entry.name, entry.name))
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
