/// A gate that says why an operation waits at it, for wait reasons and stall reports.
package protocol ExplainedGate: OperationGate {
    /// Why the operation waits at this gate.
    func gateWait(for operation: Operation) -> Operation.GateWait
}

extension Operation {
    /// Why an operation waits at a gate that a layer above this module keeps (a condition, an
    /// exclusivity category, …), in the gate's own words.
    public struct GateWait: Hashable, Sendable, CustomStringConvertible {
        /// The kind of gate, as its layer names it ("condition", "exclusivity").
        public let gate: String
        /// The names the gate waits on (a condition's name, the categories), in its order.
        public let names: [String]
        /// The operations whose finish the gate waits for, if any.
        public let waitsFor: [Operation]
        /// Why it waits, for a person, completing "it …" ("its condition "SignedIn" waits for …").
        public let description: String

        public init(gate: String, names: [String], waitsFor: [Operation] = [], description: String) {
            self.gate = gate
            self.names = names
            self.waitsFor = waitsFor
            self.description = description
        }
    }
}

extension Operation {
    /// Why an operation is not running (yet).
    public enum WaitReason: Hashable, Sendable, CustomStringConvertible {
        /// It finished: it will not run (again).
        case finished
        /// It is running.
        case executing
        /// A dependency has not finished. `isInQueue` tells whether anything will ever
        /// start it: a dependency in no queue waits for someone to call `start()`.
        case dependency(Operation, isInQueue: Bool)
        /// A barrier added to its queue before it has not run yet.
        case barrier(Operation)
        /// A gate of a layer above (a condition or exclusivity of `OperationsComposition`)
        /// holds it, and says why.
        case gate(GateWait)
        /// Its dependencies are done, but its (overridden) `isReady` returns false.
        case isReadyReturnsFalse
        /// It is in no queue; nothing will start it.
        case notInQueue
        /// Its queue is suspended.
        case queueSuspended(OperationQueue)
        /// Its queue already runs as many operations as it may.
        case concurrencyLimit(OperationQueue, limit: Int)
        /// It is ready and about to be started by its queue.
        case waitingForWorker(OperationQueue)
        /// Its overridden `isFinished` reads true, but no change of it was announced, so
        /// its queue and its dependents still wait for it.
        case finishedWithoutAnnouncement

        public var description: String {
            switch self {
            case .finished: "it has finished"
            case .executing: "it is executing"
            case .dependency(let operation, let isInQueue):
                "it waits for \(operation._misuseName)" + (isInQueue ? ", which is in a queue" : ", which is in no queue (nothing will start it)")
            case .barrier(let barrier): "it waits for a barrier of its queue (\(barrier._misuseName))"
            case .gate(let wait): wait.description
            case .isReadyReturnsFalse: "its dependencies are done but its overridden isReady returns false"
            case .notInQueue: "it is in no queue (add it to one, or call start())"
            case .queueSuspended(let queue): "its queue \"\(queue.name ?? "?")\" is suspended"
            case .concurrencyLimit(let queue, let limit) where limit == 0:
                "its queue \"\(queue.name ?? "?")\" starts nothing: its maxConcurrentOperationCount is 0"
            case .concurrencyLimit(let queue, let limit):
                "its queue \"\(queue.name ?? "?")\" already runs \(limit) operation\(limit == 1 ? "" : "s") (maxConcurrentOperationCount)"
            case .waitingForWorker(let queue): "it is ready; its queue \"\(queue.name ?? "?")\" is about to start it"
            case .finishedWithoutAnnouncement:
                "isFinished reads true but was never announced: call willChangeValue(forKey:) and didChangeValue(forKey:) with \"isFinished\" (or a key it depends on, such as \"state\") around the change; Linux has no automatic key-value notifications for dynamic properties"
            }
        }
    }
}

extension OperationExtensions where Self: Operation {
    /// Why this operation is not running now: what it waits for, in the order it would
    /// matter. Empty only for an operation that could start by hand right now.
    /// - Note: A snapshot: by the time it is read, things may have moved on.
    public var waitReasons: [Operation.WaitReason] {
        let snapshot = _readState { state in
            (phase: state.phase.kind, cancelled: state.cancellation.isCancelled, queue: state.queue,
             dependencies: state.dependencies, hidden: state.hiddenDependencies, gate: state.gateWaiting())
        }
        switch snapshot.phase {
        case .dispatched, .executing, .awaitingFinish:
            // An overridden getter that says finished while the engine never heard of it.
            // (Not while the base finish is being announced: that announcement decides.)
            if isFinished, _readState({ $0.phase.isUnannouncedIfFinished }) { return [.finishedWithoutAnnouncement] }
        default: break
        }
        switch snapshot.phase {
        case .finishing, .announcing, .finished: return [.finished]
        // Its own `isFinished` has not said finished yet: its work goes on.
        case .executing, .announcingBaseFinish, .awaitingFinish: return [.executing]
        // Claimed by a worker: about to start, or an asynchronous subclass running.
        case .dispatched: return isExecuting || snapshot.queue == nil ? [.executing] : [.waitingForWorker(snapshot.queue!)]
        case .idle, .waiting, .checking, .parked, .ready: break
        }
        var reasons: [Operation.WaitReason] = []
        if !snapshot.cancelled {
            for dependency in snapshot.dependencies {
                let (done, queued) = dependency._readState { ($0.phase.isFinishingOrFinished, $0.queue != nil) }
                if !done { reasons.append(.dependency(dependency, isInQueue: queued)) }
            }
        }
        // A cancelled operation still waits for a barrier added before it.
        for barrier in snapshot.hidden where !barrier._isFinishing { reasons.append(.barrier(barrier)) }
        if reasons.isEmpty, let gate = snapshot.gate as? any ExplainedGate { reasons.append(.gate(gate.gateWait(for: self))) }
        if !snapshot.cancelled, reasons.isEmpty, !isReady { reasons.append(.isReadyReturnsFalse) }
        guard let queue = snapshot.queue else {
            reasons.append(.notInQueue)
            return reasons
        }
        let state = queue._snapshot
        let (suspended, limit, executing) = (state.isSuspended, state.limit.executions, state.executing)
        if suspended { reasons.append(.queueSuspended(queue)) }
        if reasons.isEmpty {
            reasons.append(executing >= limit ? .concurrencyLimit(queue, limit: limit) : .waitingForWorker(queue))
        }
        return reasons
    }

    /// ``waitReasons`` for a person: "operation "filter" is not running: it waits for …".
    public var waitDescription: String {
        let reasons = waitReasons
        if reasons == [.executing] { return "\(_misuseName) is running" }
        if reasons.isEmpty { return "\(_misuseName) is ready and can be started" }
        return "\(_misuseName) is not running: " + reasons.map(\.description).joined(separator: "; ")
    }
}
