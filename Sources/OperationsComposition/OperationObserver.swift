// Lifecycle observers: started, cancelled (with the reason), produced, finished (with the outcome).

import Operations

/// Observes the life of an operation (``Operations/OperationExtensions/addObserver(_:)``). Every method has an
/// empty default: implement the ones you need.
///
/// Each event is delivered once, in the order the events happened (started, cancelled,
/// produced…, finished), never two at once for one operation. An event is delivered on
/// the thread where it happened — `start()`'s thread before `main()`, the thread that
/// cancelled, the thread that produced, the thread that finished it (after the
/// completion block) — unless another thread is delivering this operation's earlier
/// events at that moment: then that thread delivers it, right after them (so a wait for the
/// operation, or for its queue, may return before a finish told that way). No lock of the
/// library is held meanwhile. Foundation's key-value observing keeps working beside it.
public protocol OperationObserver: Sendable {
    /// The operation's work is about to run (not called when it finishes without starting,
    /// nor for a subclass whose `start()` override never calls `super.start()`).
    func operationDidStart(_ operation: Operation)
    /// The operation was cancelled; `reason` is what `Operation.cancel(with:)` gave.
    func operation(_ operation: Operation, didCancelWith reason: (any Error)?)
    /// The operation produced another one (``Operations/OperationExtensions/produceOperation(_:)``, or a child
    /// added to a running ``GroupOperation``).
    func operation(_ operation: Operation, didProduce produced: Operation)
    /// The operation finished, after its completion block. Observers are released after it.
    func operation(_ operation: Operation, didFinishWith outcome: Operation.Outcome)
}

extension OperationObserver {
    public func operationDidStart(_ operation: Operation) {}
    public func operation(_ operation: Operation, didCancelWith reason: (any Error)?) {}
    public func operation(_ operation: Operation, didProduce produced: Operation) {}
    public func operation(_ operation: Operation, didFinishWith outcome: Operation.Outcome) {}
}

/// An observer made of closures, for the simple case.
///
/// ```swift
/// operation.addObserver(BlockObserver(didFinish: { operation, outcome in log(operation, outcome) }))
/// ```
public struct BlockObserver: OperationObserver {
    private let didStart: (@Sendable (Operation) -> Void)?
    private let didCancel: (@Sendable (Operation, (any Error)?) -> Void)?
    private let didProduce: (@Sendable (Operation, Operation) -> Void)?
    private let didFinish: (@Sendable (Operation, Operation.Outcome) -> Void)?

    /// An observer calling the closures given.
    public init(
        didStart: (@Sendable (Operation) -> Void)? = nil,
        didCancel: (@Sendable (Operation, (any Error)?) -> Void)? = nil,
        didProduce: (@Sendable (Operation, Operation) -> Void)? = nil,
        didFinish: (@Sendable (Operation, Operation.Outcome) -> Void)? = nil
    ) {
        self.didStart = didStart
        self.didCancel = didCancel
        self.didProduce = didProduce
        self.didFinish = didFinish
    }

    public func operationDidStart(_ operation: Operation) { didStart?(operation) }
    public func operation(_ operation: Operation, didCancelWith reason: (any Error)?) { didCancel?(operation, reason) }
    public func operation(_ operation: Operation, didProduce produced: Operation) { didProduce?(operation, produced) }
    public func operation(_ operation: Operation, didFinishWith outcome: Operation.Outcome) { didFinish?(operation, outcome) }
}

extension OperationExtensions where Self: Operation {
    /// Attaches a lifecycle observer (see ``OperationObserver``). An observer added after
    /// an event has happened is not told about it; one added to a finished operation is
    /// told nothing. Observers are released once the operation has finished.
    public func addObserver(_ observer: some OperationObserver) {
        _addLifecycleTap(ObserverTap(observer: observer))
    }

    /// Adds `operation` where this one runs: to the group when this operation is a child of
    /// a ``GroupOperation`` (which then waits for it too), otherwise to this operation's
    /// queue; and tells the observers.
    /// - Important: Producing from an operation that is in no queue, or has finished, is a
    ///   programmer error.
    public func produceOperation(_ operation: Operation) {
        guard let queue = _queueWhileUnfinished else {
            Misuse.fail("produceOperation: \(_misuseName) is in no queue or has finished; it cannot produce \(operation._misuseName)")
        }
        if let group = (queue as? GroupChildQueue)?.group {
            group.addChild(operation)
        } else {
            queue.addOperation(operation)
        }
        _postLifecycleEvent(.produced(operation))
    }
}

/// Tells an observer the events of the operation it observes.
struct ObserverTap<Observer: OperationObserver>: LifecycleTap {
    let observer: Observer

    func deliver(_ event: LifecycleEvent, of operation: Operation) {
        switch event {
        case .started: observer.operationDidStart(operation)
        case .cancelled(let reason): observer.operation(operation, didCancelWith: reason)
        case .produced(let produced): observer.operation(operation, didProduce: produced)
        case .finished(let outcome): observer.operation(operation, didFinishWith: outcome)
        }
    }
}
