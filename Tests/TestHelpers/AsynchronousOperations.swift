import Operations
import OperationsTestSupport

/// The classic asynchronous operation as the tutorials write it: a `State` enum whose
/// changes are announced with `willChangeValue(forKey:)`/`didChangeValue(forKey:)` under
/// the "isReady"/"isExecuting"/"isFinished" keys. (The tutorials' unsynchronized `state`
/// is kept behind a lock here so that the suite stays Thread Sanitizer clean.)
/// - Note: `@unchecked Sendable`: `_state` is read and written only under `lock`.
open class TutorialAsyncOperation: Operation, @unchecked Sendable {
    public enum State: String, Sendable {
        case ready, executing, finished
        fileprivate var keyPath: String { "is" + rawValue.capitalized }
    }

    private let lock = NSLock()
    private var _state = State.ready

    public override init() {
        super.init()
    }

    public var state: State {
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

    open override var isReady: Bool { super.isReady && state == .ready }
    open override var isExecuting: Bool { state == .executing }
    open override var isFinished: Bool { state == .finished }
    open override var isAsynchronous: Bool { true }

    open override func start() {
        if isCancelled {
            state = .finished
            return
        }
        state = .executing
        main()
    }

    open override func cancel() {
        super.cancel()
        if state == .executing { state = .finished }
    }

    public func finish() { state = .finished }
}

/// An asynchronous operation that finishes, on another thread, when a closure says so.
/// - Note: `@unchecked Sendable`: its own fields are `let`s of `Sendable` types.
public final class DeferredOperation: TutorialAsyncOperation, @unchecked Sendable {
    public let started = BlockingSignal()
    private let body: @Sendable (DeferredOperation) -> Void

    public init(_ body: @escaping @Sendable (DeferredOperation) -> Void = { _ in }) {
        self.body = body
    }

    public override func main() {
        started.open()
        body(self)
    }
}

/// Apple's documented style: `_executing`/`_finished` flags, the `"isExecuting"` and
/// `"isFinished"` keys announced around each change, and key-path forms for cancel.
/// - Note: `@unchecked Sendable`: the flags are read and written only under `lock`.
public final class DocumentedAsyncOperation: Operation, @unchecked Sendable {
    private let lock = NSLock()
    private var _executing = false
    private var _finished = false
    public let work: @Sendable (@escaping @Sendable () -> Void) -> Void

    public init(work: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
        self.work = work
    }

    public override var isAsynchronous: Bool { true }
    public override var isExecuting: Bool { lock.withLock { _executing } }
    public override var isFinished: Bool { lock.withLock { _finished } }

    public override func start() {
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
public func enteringThenWaitingForCancellation<Value: Sendable>(_ entered: TestGate, returning value: Value) -> AsyncBlockOperation<Value> {
    AsyncBlockOperation {
        entered.open()
        await TestGate().wait()
        try Task.checkCancellation()
        return value
    }
}

/// As `enteringThenWaitingForCancellation(_:returning:)`, for an operation without a value.
public func enteringThenWaitingForCancellation(_ entered: TestGate) -> AsyncBlockOperation<Void> {
    enteringThenWaitingForCancellation(entered, returning: ())
}
