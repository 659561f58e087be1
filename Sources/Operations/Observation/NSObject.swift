#if !canImport(ObjectiveC)

/// Foundation's `NSObject` with key-value observing, for Linux.
///
/// Linux's Foundation has no KVO. This subclass adds Darwin's observing API, so that an
/// observer written for Darwin (`class Observer: NSObject { override func observeValue(...) }`)
/// compiles with `import Operations` and receives notifications from operations and queues.
/// An instance still is a `Foundation.NSObject`.
///
/// - Note: Only the keys that `Operation` and `OperationQueue` announce carry values
///   (see the "Key-Value Observing" article). Other keys can be announced with
///   `willChangeValue(forKey:)`/`didChangeValue(forKey:)` but report no values.
open class NSObject: Foundation.NSObject, KeyValueObservable {
    private let _observation = ObservationStorage()

    public override init() {
        super.init()
    }

    /// The registry, if any observer was ever added.
    final var _observationRegistry: ObservationRegistry? { _observation.registry }

    /// Whether an observer was ever added (one atomic load).
    final var _hasObservationRegistry: Bool { _observation.hasRegistry }

    final func _makeObservationRegistry() -> ObservationRegistry { _observation.makeRegistry() }

    /// The keys whose changes also change `key`: a change announced for one of them is
    /// reported to the observers of `key` (Darwin's dependent keys), and to the queue for an
    /// operation's `isReady`, `isExecuting`, `isFinished`. The base returns none.
    /// - Note: Darwin's per-key form (`@objc class func keyPathsForValuesAffecting<Key>()`)
    ///   needs the Objective-C runtime; on Linux override this general form.
    open class func keyPathsForValuesAffectingValue(forKey key: String) -> Set<String> { [] }

    final func _keysTriggering(_ key: String) -> Set<String> {
        let type = Swift.type(of: self)
        return DependentKeys.triggers(of: key, in: type) { type.keyPathsForValuesAffectingValue(forKey: $0) }
    }

    /// Called on the observer when an observed key changes.
    open func observeValue(
        forKeyPath keyPath: String?, of object: Any?, change: [NSKeyValueChangeKey: Any]?,
        context: UnsafeMutableRawPointer?
    ) {}

    /// Registers `observer` to receive `observeValue(forKeyPath:of:change:context:)` for `keyPath`.
    /// - Note: The observer is not retained (as on Darwin).
    open func addObserver(
        _ observer: NSObject, forKeyPath keyPath: String, options: NSKeyValueObservingOptions = [],
        context: UnsafeMutableRawPointer?
    ) {
        _addObserver(observer, keyPath: keyPath, options: options, context: context)
    }

    /// Removes a registration made with the same observer, key path and context.
    /// - Important: Removing an observer that is not registered is a programmer error, as on
    ///   Darwin. Removing one inside a `deinit` (the observer's or this object's) is fine.
    open func removeObserver(_ observer: NSObject, forKeyPath keyPath: String, context: UnsafeMutableRawPointer?) {
        _removeObserver(observer, keyPath: keyPath, context: context, matchContext: true)
    }

    /// Removes the most recent registration made with the same observer and key path.
    open func removeObserver(_ observer: NSObject, forKeyPath keyPath: String) {
        _removeObserver(observer, keyPath: keyPath, context: nil, matchContext: false)
    }

    /// Announces that the value of `key` is about to change.
    open func willChangeValue(forKey key: String) {
        _observationRegistry?.willChange(self, key: key)
    }

    /// Announces that the value of `key` has changed.
    open func didChangeValue(forKey key: String) {
        _observationRegistry?.didChange(self, key: key)
    }

    /// The current value of an observable key, read when a change is announced.
    /// `Operation` and `OperationQueue` override it.
    func _observableValue(forKey key: String) -> Any? { nil }
}

/// The token returned by `observe(_:options:changeHandler:)`; the observation lasts until it
/// is invalidated or released.
public final class NSKeyValueObservation: Sendable {
    private let registration: Locked<(registry: ObservationRegistry?, ids: [UInt64])>

    init(registry: ObservationRegistry, ids: [UInt64]) {
        registration = Locked((registry, ids))
    }

    /// Stops the observation. Safe to call more than once.
    public func invalidate() {
        let (registry, ids) = registration.withLock { state in
            defer { state.registry = nil }
            return (state.registry, state.ids)
        }
        for id in ids { registry?.remove(id: id) }
    }

    deinit {
        invalidate()
    }
}
#endif
