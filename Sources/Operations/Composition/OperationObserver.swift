// Lifecycle observers: started, cancelled (with the reason), produced, finished (with the outcome).

/// Observes the life of an operation (``Operation/addObserver(_:)``). Every method has an
/// empty default: implement the ones you need.
///
/// Each event is delivered once, in the order the events happened (started, cancelled,
/// produced…, finished), never two at once for one operation. An event is delivered on
/// the thread where it happened — `start()`'s thread before `main()`, the thread that
/// cancelled, the thread that produced, the thread that finished it (after the
/// completion block) — unless another thread is delivering this operation's earlier
/// events at that moment: then that thread delivers it, right after them. No lock of
/// the library is held meanwhile. Foundation's key-value observing keeps working beside it.
public protocol OperationObserver: Sendable {
    /// The operation's work is about to run (not called when it finishes without starting,
    /// nor for a subclass whose `start()` override never calls `super.start()`).
    func operationDidStart(_ operation: Operation)
    /// The operation was cancelled; `reason` is what ``Operation/cancel(with:)`` gave.
    func operation(_ operation: Operation, didCancelWith reason: (any Error)?)
    /// The operation produced another one (``Operation/produceOperation(_:)``, or a child
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
        let first = _update { state -> Bool? in
            guard !state.phase.isFinishingOrFinished else { return nil }
            let extras = state.attachments ?? CompositionAttachments()
            state.attachments = extras
            extras.observers.append(observer)
            return extras.observers.count == 1
        }
        guard first == true else { return }
        _onStart { [weak self] in self?._postObserverEvent(.started) }
        _onFinish { [weak self] outcome in self?._postObserverEvent(.finished(outcome)) }
    }

    /// Adds `operation` where this one runs: to the group when this operation is a child of
    /// a ``GroupOperation`` (which then waits for it too), otherwise to this operation's
    /// queue; and tells the observers.
    /// - Important: Producing from an operation that is in no queue, or has finished, is a
    ///   programmer error.
    public func produceOperation(_ operation: Operation) {
        let queue = _update { state -> OperationQueue? in
            state.phase.isFinishingOrFinished ? nil : state.queue
        }
        guard let queue else {
            Misuse.fail("produceOperation: \(_misuseName) is in no queue or has finished; it cannot produce \(operation._misuseName)")
        }
        if let group = (queue as? GroupChildQueue)?.group {
            group.addChild(operation)
        } else {
            queue.addOperation(operation)
        }
        _postObserverEvent(.produced(operation))
    }
}

extension Operation {
    final func _postObserverEvent(_ event: ObserverEvent) {
        _update { $0.attachments?.post(event) }
        _deliverObserverEvents()
    }

    /// Delivers the recorded events, in order, unless another thread is doing so (it will
    /// deliver them too). Observers are dropped after the finish event, outside the lock.
    final func _deliverObserverEvents() {
        while true {
            let batch = _update { state -> (events: [ObserverEvent], observers: [any OperationObserver])? in
                guard let extras = state.attachments, !extras.isDeliveringEvents, !extras.observerEvents.isEmpty else { return nil }
                extras.isDeliveringEvents = true
                defer { extras.observerEvents = [] }
                return (extras.observerEvents, extras.observers)
            }
            guard let batch else { return }
            var finished = false
            for event in batch.events {
                for observer in batch.observers {
                    switch event {
                    case .started: observer.operationDidStart(self)
                    case .cancelled(let reason): observer.operation(self, didCancelWith: reason)
                    case .produced(let produced): observer.operation(self, didProduce: produced)
                    case .finished(let outcome): observer.operation(self, didFinishWith: outcome)
                    }
                }
                if case .finished = event { finished = true }
            }
            let released = _update { state -> [any OperationObserver] in
                guard let extras = state.attachments else { return [] }
                extras.isDeliveringEvents = false
                guard finished else { return [] }
                defer { extras.observers = [] }
                return extras.observers
            }
            _ = released
        }
    }
}
