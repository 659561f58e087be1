import Operations
import OperationsComposition
import OperationsTestSupport

/// The classic asynchronous operation as the tutorials write it: a `State` enum whose
/// changes are announced with `willChangeValue(forKey:)`/`didChangeValue(forKey:)` under
/// the "isReady"/"isExecuting"/"isFinished" keys. (The tutorials' unsynchronized `state`
/// is kept behind a lock here so that the suite stays Thread Sanitizer clean.)
class TutorialAsyncOperation: Operation, @unchecked Sendable {
    enum State: String {
        case ready, executing, finished
        fileprivate var keyPath: String { "is" + rawValue.capitalized }
    }

    private let lock = NSLock()
    private var _state = State.ready

    var state: State {
        get { lock.withLock { _state } }
        set {
            let oldValue = state
            willChangeValue(forKey: newValue.keyPath)
            willChangeValue(forKey: oldValue.keyPath)
            lock.withLock { _state = newValue }
            didChangeValue(forKey: oldValue.keyPath)
            didChangeValue(forKey: newValue.keyPath)
        }
    }

    override var isReady: Bool { super.isReady && state == .ready }
    override var isExecuting: Bool { state == .executing }
    override var isFinished: Bool { state == .finished }
    override var isAsynchronous: Bool { true }

    override func start() {
        if isCancelled {
            state = .finished
            return
        }
        state = .executing
        main()
    }

    override func cancel() {
        super.cancel()
        if state == .executing { state = .finished }
    }

    func finish() { state = .finished }
}

/// An asynchronous operation that finishes, on another thread, when a closure says so.
final class DeferredOperation: TutorialAsyncOperation, @unchecked Sendable {
    let started = Gate()
    private let body: @Sendable (DeferredOperation) -> Void

    init(_ body: @escaping @Sendable (DeferredOperation) -> Void = { _ in }) {
        self.body = body
    }

    override func main() {
        started.open()
        body(self)
    }
}

/// Apple's documented style: `_executing`/`_finished` flags, the `"isExecuting"` and
/// `"isFinished"` keys announced around each change, and key-path forms for cancel.
final class DocumentedAsyncOperation: Operation, @unchecked Sendable {
    private let lock = NSLock()
    private var _executing = false
    private var _finished = false
    let work: @Sendable (@escaping @Sendable () -> Void) -> Void

    init(work: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
        self.work = work
    }

    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { lock.withLock { _executing } }
    override var isFinished: Bool { lock.withLock { _finished } }

    override func start() {
        if isCancelled {
            willChangeValue(for: \.isFinished)
            lock.withLock { _finished = true }
            didChangeValue(for: \.isFinished)
            return
        }
        willChangeValue(forKey: "executing")
        lock.withLock { _executing = true }
        didChangeValue(forKey: "executing")
        work { [self] in complete() }
    }

    private func complete() {
        willChangeValue(forKey: "isFinished")
        willChangeValue(forKey: "isExecuting")
        lock.withLock {
            _executing = false
            _finished = true
        }
        didChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isFinished")
    }
}

/// An async operation whose body opens `entered`, waits until its task is cancelled, then
/// throws `CancellationError` (were it not cancelled it would return `value`).
func enteringThenWaitingForCancellation<Value: Sendable>(_ entered: TestGate, returning value: Value) -> AsyncBlockOperation<Value> {
    AsyncBlockOperation {
        entered.open()
        await TestGate().wait()
        try Task.checkCancellation()
        return value
    }
}

/// As `enteringThenWaitingForCancellation(_:returning:)`, for an operation without a value.
func enteringThenWaitingForCancellation(_ entered: TestGate) -> AsyncBlockOperation<Void> {
    enteringThenWaitingForCancellation(entered, returning: ())
}
