#if !canImport(ObjectiveC)
/// The key-path forms of key-value observing: `observe(_:options:changeHandler:)`,
/// `willChangeValue(for:)` and `didChangeValue(for:)`, for operations and queues.
///
/// Every `NSObject` conforms; nothing else needs to. It plays the part of the protocol
/// Darwin's Foundation hangs these methods on (`_KeyValueCodingAndObserving`), so that
/// `observe(\.isFinished) { operation, change in … }` gets `operation` typed as the
/// observed subclass.
public protocol KeyPathObservable {}

extension NSObject: KeyPathObservable {}

extension KeyPathObservable where Self: Operation {
    /// Observes an operation's `isReady`, `isExecuting`, `isFinished`, `isCancelled`,
    /// `isAsynchronous` or `isConcurrent`.
    public func observe<Value>(
        _ keyPath: KeyPath<Self, Value>, options: NSKeyValueObservingOptions = [],
        changeHandler: @escaping (Self, NSKeyValueObservedChange<Value>) -> Void
    ) -> NSKeyValueObservation {
        if let key = Self._observableKey(keyPath) {
            return _observe(keys: [key], options: options) { object, change in
                changeHandler(object as! Self, NSKeyValueObservedChange(change))
            }
        }
        // A key path that cannot be named (an override in a final class refers to its own
        // getter): follow every state key and report the changes of this key path's value.
        guard Value.self == Bool.self else {
            Misuse.fail("key path \(keyPath) of \(Self.self) is not observable on this platform; observable keys: isReady, isExecuting, isFinished, isCancelled, isAsynchronous, isConcurrent")
        }
        let last = Locked<Bool?>(self[keyPath: keyPath] as? Bool)
        let observation = _observe(keys: Operation._stateKeys, options: options.subtracting([.initial, .prior])) {
            object, _ in
            let object = object as! Self
            // A finish is reported once processed (`_processFinishThenAnnounce`): a change
            // seen when an earlier key is announced waits for the announcement of isFinished.
            if object._awaitsFinishAnnouncement { return }
            let new = object[keyPath: keyPath]
            let newFlag = new as? Bool
            let old = last.withLock { last in
                defer { last = newFlag }
                return last
            }
            guard old != newFlag else { return }
            changeHandler(object, NSKeyValueObservedChange(
                new: options.contains(.new) ? new : nil, old: options.contains(.old) ? old as? Value : nil))
        }
        if options.contains(.initial) {
            changeHandler(self, NSKeyValueObservedChange(new: options.contains(.new) ? self[keyPath: keyPath] : nil, old: nil))
        }
        return observation
    }

    /// Announces that the value at `keyPath` is about to change: `willChangeValue(forKey:)`
    /// with its key (every state key for a key path that cannot be named).
    public func willChangeValue<Value>(for keyPath: KeyPath<Self, Value>) {
        for key in Self._observableKey(keyPath).map({ [$0] }) ?? Operation._stateKeys {
            willChangeValue(forKey: key)
        }
    }

    /// Announces that the value at `keyPath` changed: `didChangeValue(forKey:)` with its key
    /// (every state key for a key path that cannot be named).
    public func didChangeValue<Value>(for keyPath: KeyPath<Self, Value>) {
        for key in Self._observableKey(keyPath).map({ [$0] }) ?? Operation._stateKeys {
            didChangeValue(forKey: key)
        }
    }

    private static func _observableKey(_ keyPath: AnyKeyPath) -> String? {
        switch keyPath {
        case \Self.isReady: "isReady"
        case \Self.isExecuting: "isExecuting"
        case \Self.isFinished: "isFinished"
        case \Self.isCancelled: "isCancelled"
        case \Self.isAsynchronous: "isAsynchronous"
        case \Self.isConcurrent: "isConcurrent"
        default: nil
        }
    }
}

extension Operation {
    /// The keys announced for a key path that cannot be named.
    static let _stateKeys = ["isReady", "isExecuting", "isFinished", "isCancelled"]

    /// Whether `isFinished` reads true but the engine has not yet processed the finish (its
    /// announcement is still to come). Calls the getter: no lock held.
    var _awaitsFinishAnnouncement: Bool {
        guard isFinished else { return false }
        return _readState { state in
            switch state.phase {
            case .announcing, .finished: false
            default: true
            }
        }
    }
}

extension KeyPathObservable where Self: OperationQueue {
    /// Observes a queue's `operationCount`, `operations`, `isSuspended`,
    /// `maxConcurrentOperationCount`, `name` or `qualityOfService`.
    public func observe<Value>(
        _ keyPath: KeyPath<Self, Value>, options: NSKeyValueObservingOptions = [],
        changeHandler: @escaping (Self, NSKeyValueObservedChange<Value>) -> Void
    ) -> NSKeyValueObservation {
        _observe(keys: [Self._observableKey(keyPath)], options: options) { object, change in
            changeHandler(object as! Self, NSKeyValueObservedChange(change))
        }
    }

    private static func _observableKey(_ keyPath: AnyKeyPath) -> String {
        switch keyPath {
        case \Self.operationCount: "operationCount"
        case \Self.operations: "operations"
        case \Self.isSuspended: "isSuspended"
        case \Self.maxConcurrentOperationCount: "maxConcurrentOperationCount"
        case \Self.name: "name"
        case \Self.qualityOfService: "qualityOfService"
        default: Misuse.fail("key path \(keyPath) of \(Self.self) is not observable on this platform; observable keys: operationCount, operations, isSuspended, maxConcurrentOperationCount, name, qualityOfService")
        }
    }
}
#endif
