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

/// An operation with a state of its own, as the frameworks built on Operation keep theirs
/// (PSOperations and the "Advanced NSOperations" sample): every change of `state` is
/// announced only through the `"state"` key, and the keys a subclass lists in
/// `keysDependingOnState` are declared dependent on it through
/// `keyPathsForValuesAffectingValue(forKey:)`. (The frameworks' unsynchronized state is kept
/// behind a lock here so that the suite stays Thread Sanitizer clean.)
/// - Note: `@unchecked Sendable`: `_state` is read and written only under `lock`.
open class OwnStateOperation<State: Sendable>: Operation, @unchecked Sendable {
    private let lock = NSLock()
    private var _state: State

    public init(state: State) {
        _state = state
        super.init()
    }

    public final var state: State {
        get { lock.withLock { _state } }
        set {
            willChangeValue(forKey: "state")
            lock.withLock { _state = newValue }
            didChangeValue(forKey: "state")
        }
    }

    /// The keys whose values depend on `"state"`.
    open class var keysDependingOnState: Set<String> { [] }

    open override class func keyPathsForValuesAffectingValue(forKey key: String) -> Set<String> {
        if keysDependingOnState.contains(key) { return ["state"] }
        return super.keyPathsForValuesAffectingValue(forKey: key)
    }
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
