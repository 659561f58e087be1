import DifferentialPrograms
import Dispatch
import Synchronization

// The operation subclasses the programs use, one per shape of `OperationKind`, each with a
// variant that overrides `isReady` (a gate the driver opens). Written as the tutorials and
// frameworks built on Operation write theirs.

/// Overrides `main()` only.
/// - Note: `@unchecked Sendable` as its superclass; its one stored property is a `let` of a
///   `Sendable` type.
class PlainOperation: TestedOperation, @unchecked Sendable {
    let script: OperationScript

    init(script: OperationScript) {
        self.script = script
        super.init()
        name = script.name
    }

    override func main() { script.work(self) }
}

/// - Note: `@unchecked Sendable`: no stored state of its own.
final class GatedPlainOperation: PlainOperation, @unchecked Sendable {
    override var isReady: Bool { super.isReady && script.gateIsOpen }
}

/// Overrides `start()` to record the call, then calls `super.start()`.
/// - Note: `@unchecked Sendable`: no stored state of its own.
class StartLoggingOperation: PlainOperation, @unchecked Sendable {
    override func start() {
        script.recordStart()
        super.start()
    }
}

/// - Note: `@unchecked Sendable`: no stored state of its own.
final class GatedStartLoggingOperation: StartLoggingOperation, @unchecked Sendable {
    override var isReady: Bool { super.isReady && script.gateIsOpen }
}

/// Says it is asynchronous, but overrides neither `start()` nor `isFinished`.
/// - Note: `@unchecked Sendable`: no stored state of its own.
class AdvisedAsynchronousOperation: PlainOperation, @unchecked Sendable {
    override var isAsynchronous: Bool { true }
}

/// - Note: `@unchecked Sendable`: no stored state of its own.
final class GatedAdvisedAsynchronousOperation: AdvisedAsynchronousOperation, @unchecked Sendable {
    override var isReady: Bool { super.isReady && script.gateIsOpen }
}

/// Keeps its own state, read by its `isExecuting`/`isFinished`, and announces changes either
/// by those keys or only by `"state"`.
/// - Note: `@unchecked Sendable`: the state is in a `Guarded`, the claim to finish is atomic,
///   the rest are `let`s of `Sendable` types.
class StatefulOperation: StateAnnouncingOperation, @unchecked Sendable {
    enum State { case initial, executing, finished }

    let script: OperationScript
    let finish: Finish
    let announcement: Announcement
    private let state = Guarded(State.initial)
    private let finishClaimed = Atomic(false)
    /// Signalled as `start()` returns: "later" means after that. (Linux's Foundation's
    /// `super.start()` finishes an operation a second time when its `isFinished` was
    /// announced while `main()` ran.)
    let startReturned = DispatchSemaphore(value: 0)

    init(script: OperationScript, finish: Finish, announcement: Announcement) {
        self.script = script
        self.finish = finish
        self.announcement = announcement
        super.init()
        name = script.name
    }

    override var isExecuting: Bool { state.withLock { $0 == .executing } }
    override var isFinished: Bool { state.withLock { $0 == .finished } }

    func becomeExecuting() {
        announce(["isExecuting"]) { state.withLock { $0 = .executing } }
    }

    /// Finishes once, whoever calls first.
    func finishOnce() {
        guard !finishClaimed.exchange(true, ordering: .sequentiallyConsistent) else { return }
        announce(["isExecuting", "isFinished"]) { state.withLock { $0 = .finished } }
    }

    /// After the work: finishes now, or from another thread once `start()` returned.
    func finishAfterWork() {
        switch finish {
        case .beforeStartReturns:
            finishOnce()
        case .later:
            DispatchQueue.global().async {
                self.startReturned.wait()
                self.finishOnce()
            }
        }
    }

    private func announce(_ keys: [String], change: () -> Void) {
        let announced = announcement == .keys ? keys : ["state"]
        for key in announced { willChangeValue(forKey: key) }
        change()
        for key in announced.reversed() { didChangeValue(forKey: key) }
    }
}

/// `start()` calls `super.start()`, then finishes a cancelled operation itself; `main()`
/// works and finishes (now or later).
/// - Note: `@unchecked Sendable`: no stored state of its own.
class SuperStartingOperation: StatefulOperation, @unchecked Sendable {
    override func start() {
        script.recordStart()
        super.start()
        if isCancelled { finishOnce() }
        startReturned.signal()
    }

    override func main() {
        becomeExecuting()
        script.work(self)
        finishAfterWork()
    }
}

/// - Note: `@unchecked Sendable`: no stored state of its own.
final class GatedSuperStartingOperation: SuperStartingOperation, @unchecked Sendable {
    override var isReady: Bool { super.isReady && script.gateIsOpen }
}

/// Its own `start()`, without `super.start()`: the classic asynchronous operation.
/// - Note: `@unchecked Sendable`: no stored state of its own.
class OwnStartOperation: StatefulOperation, @unchecked Sendable {
    override var isAsynchronous: Bool { true }

    override func start() {
        script.recordStart()
        defer { startReturned.signal() }
        if isCancelled {
            finishOnce()
            return
        }
        becomeExecuting()
        script.work(self)
        finishAfterWork()
    }
}

/// - Note: `@unchecked Sendable`: no stored state of its own.
final class GatedOwnStartOperation: OwnStartOperation, @unchecked Sendable {
    override var isReady: Bool { super.isReady && script.gateIsOpen }
}

/// An `OperationQueue` whose `addOperation(_:)` records each call.
/// - Note: `@unchecked Sendable` as its superclass; its one stored property is a `let` of a
///   `Sendable` type.
final class RecordingQueue: TestedOperationQueue, @unchecked Sendable {
    let recorder: Recorder

    init(recorder: Recorder) {
        self.recorder = recorder
        super.init()
    }

    override func addOperation(_ op: TestedOperation) {
        recorder.append("queue.addOperationCalls", op.name ?? "unnamed")
        super.addOperation(op)
    }
}

/// Makes the operation for `script`'s spec (not for a `.queueBlock`, which the queue makes).
func makeOperation(_ script: OperationScript) -> TestedOperation {
    let gated = script.spec.readyGate
    switch script.spec.kind {
    case .block(let blocks):
        let operation = TestedBlockOperation()
        operation.name = script.name
        for part in 1...blocks {
            operation.addExecutionBlock { [weak operation] in
                guard let operation else { return }
                script.work(operation, part: part)
            }
        }
        return operation
    case .plain:
        return gated ? GatedPlainOperation(script: script) : PlainOperation(script: script)
    case .startLogging:
        return gated ? GatedStartLoggingOperation(script: script) : StartLoggingOperation(script: script)
    case .advisedAsynchronous:
        return gated ? GatedAdvisedAsynchronousOperation(script: script) : AdvisedAsynchronousOperation(script: script)
    case .superStart(let finish, let announcement):
        return gated
            ? GatedSuperStartingOperation(script: script, finish: finish, announcement: announcement)
            : SuperStartingOperation(script: script, finish: finish, announcement: announcement)
    case .ownStart(let finish, let announcement):
        return gated
            ? GatedOwnStartOperation(script: script, finish: finish, announcement: announcement)
            : OwnStartOperation(script: script, finish: finish, announcement: announcement)
    case .queueBlock:
        preconditionFailure("the queue makes the operation of a block")
    }
}
