import DifferentialPrograms
import Dispatch
import Synchronization

/// The operations of one run, by index, and what they share. Holds the operations strongly
/// until the run ends; `clear()` then breaks the cycles through their scripts.
final class RunContext: Sendable {
    let recorder = Recorder()
    /// Signalled by every completion block once it has recorded.
    let completionRan = DispatchSemaphore(value: 0)
    private let operations: Guarded<[Int: TestedOperation]> = Guarded([:])

    func register(_ operation: TestedOperation, at index: Int) {
        operations.withLock { $0[index] = operation }
    }

    func operation(_ index: Int) -> TestedOperation? {
        operations.withLock { $0[index] }
    }

    func clear() {
        let dropped = operations.withLock { operations in
            defer { operations = [:] }
            return operations
        }
        _ = dropped
    }
}

/// What an operation of the program does when it works, and its gate and hold.
final class OperationScript: Sendable {
    let index: Int
    let spec: OperationSpec
    let context: RunContext
    private let gate: Atomic<Bool>
    /// Signalled when a holding operation's work started; the driver then cancels it and
    /// signals `release`.
    let started = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)

    init(index: Int, spec: OperationSpec, context: RunContext) {
        self.index = index
        self.spec = spec
        self.context = context
        gate = Atomic(!spec.readyGate)
    }

    var name: String { spec.name }
    var recorder: Recorder { context.recorder }

    var gateIsOpen: Bool { gate.load(ordering: .sequentiallyConsistent) }

    func openGate() { gate.store(true, ordering: .sequentiallyConsistent) }

    func recordStart() {
        recorder.enter(name)
        recorder.increment("\(name).start")
    }

    /// The work: in `main()`, in an own `start()`, or in each block of a `BlockOperation`
    /// (`part` numbers the block; only the first holds and cancels).
    func work(_ operation: TestedOperation, part: Int = 1) {
        recorder.enter(name)
        recorder.increment(part == 1 ? "\(name).work" : "\(name).work\(part)")
        let dependencies = spec.dependencies.map { context.operation($0) }
        recorder.set("\(name).dependenciesFinishedAtWork", dependencies.allSatisfy { $0?.isFinished == true })
        guard part == 1 else { return }
        if spec.holdsUntilReleased {
            started.signal()
            release.wait()
            recorder.set("\(name).isCancelledAfterRelease", operation.isCancelled)
        }
        if spec.cancelsItself {
            operation.cancel()
            recorder.set("\(name).isCancelledAfterCancellingItself", operation.isCancelled)
        }
        for target in spec.cancelsInWork {
            context.operation(target)?.cancel()
        }
    }

    func installCompletionBlock(on operation: TestedOperation) {
        guard spec.completion != .none else { return }
        let waits = spec.completion == .waitsForItsOperation
        operation.completionBlock = { [self] in
            recorder.increment("\(name).completion")
            if let operation = context.operation(index) {
                recorder.set(
                    "\(name).completionSaw", "finished=\(operation.isFinished) cancelled=\(operation.isCancelled)")
                if waits {
                    operation.waitUntilFinished()
                    recorder.set("\(name).waitInCompletionReturned", true)
                }
            }
            context.completionRan.signal()
        }
    }
}
