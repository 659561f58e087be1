#if !canImport(ObjectiveC)
/// Linux stand-in for Darwin's protocol that carries the key-path forms of KVO
/// (`observe(_:options:changeHandler:)`, `willChangeValue(for:)`, `didChangeValue(for:)`).
public protocol _KeyValueCodingAndObserving {}

extension NSObject: _KeyValueCodingAndObserving {}

extension _KeyValueCodingAndObserving where Self: Operation {
    /// Observes an operation's `isReady`, `isExecuting`, `isFinished`, `isCancelled`,
    /// `isAsynchronous` or `isConcurrent`.
    public func observe<Value>(
        _ keyPath: KeyPath<Self, Value>, options: NSKeyValueObservingOptions = [],
        changeHandler: @escaping (Self, NSKeyValueObservedChange<Value>) -> Void
    ) -> NSKeyValueObservation {
        _observe(key: Self._observableKey(keyPath), options: options) { object, change in
            changeHandler(object as! Self, NSKeyValueObservedChange(change))
        }
    }

    public func willChangeValue<Value>(for keyPath: KeyPath<Self, Value>) {
        willChangeValue(forKey: Self._observableKey(keyPath))
    }

    public func didChangeValue<Value>(for keyPath: KeyPath<Self, Value>) {
        didChangeValue(forKey: Self._observableKey(keyPath))
    }

    private static func _observableKey(_ keyPath: AnyKeyPath) -> String {
        switch keyPath {
        case \Self.isReady: "isReady"
        case \Self.isExecuting: "isExecuting"
        case \Self.isFinished: "isFinished"
        case \Self.isCancelled: "isCancelled"
        case \Self.isAsynchronous: "isAsynchronous"
        case \Self.isConcurrent: "isConcurrent"
        default: Misuse.fail("key path \(keyPath) of \(Self.self) is not observable on this platform; observable keys: isReady, isExecuting, isFinished, isCancelled, isAsynchronous, isConcurrent")
        }
    }
}

extension _KeyValueCodingAndObserving where Self: OperationQueue {
    /// Observes a queue's `operationCount`, `operations`, `isSuspended`,
    /// `maxConcurrentOperationCount`, `name` or `qualityOfService`.
    public func observe<Value>(
        _ keyPath: KeyPath<Self, Value>, options: NSKeyValueObservingOptions = [],
        changeHandler: @escaping (Self, NSKeyValueObservedChange<Value>) -> Void
    ) -> NSKeyValueObservation {
        _observe(key: Self._observableKey(keyPath), options: options) { object, change in
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
