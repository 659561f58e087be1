#if !canImport(ObjectiveC)
import Synchronization

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
open class NSObject: Foundation.NSObject {
    /// Created with the first observer; released with the object.
    private let _registry = Atomic<Unmanaged<ObservationRegistry>?>(nil)

    public override init() {
        super.init()
    }

    deinit {
        _registry.load(ordering: .acquiring)?.release()
    }

    /// The registry, if any observer was ever added.
    final var _observationRegistry: ObservationRegistry? {
        _registry.load(ordering: .acquiring)?.takeUnretainedValue()
    }

    private func _makeRegistry() -> ObservationRegistry {
        if let existing = _observationRegistry { return existing }
        let fresh = Unmanaged.passRetained(ObservationRegistry())
        let (exchanged, current) = _registry.compareExchange(
            expected: nil, desired: fresh, ordering: .acquiringAndReleasing)
        if exchanged { return fresh.takeUnretainedValue() }
        fresh.release()
        return current!.takeUnretainedValue()
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
        let registry = _makeRegistry()
        let entry = registry.add(observer: observer, keyPath: keyPath, options: options, context: context, handler: nil)
        if options.contains(.initial) { registry.deliverInitial(entry, object: self) }
    }

    /// Removes a registration made with the same observer, key path and context.
    /// - Important: Removing an observer that is not registered is a programmer error, as on Darwin.
    open func removeObserver(_ observer: NSObject, forKeyPath keyPath: String, context: UnsafeMutableRawPointer?) {
        _removeObserver(observer, keyPath: keyPath, context: context, matchContext: true)
    }

    /// Removes the most recent registration made with the same observer and key path.
    open func removeObserver(_ observer: NSObject, forKeyPath keyPath: String) {
        _removeObserver(observer, keyPath: keyPath, context: nil, matchContext: false)
    }

    private func _removeObserver(
        _ observer: NSObject, keyPath: String, context: UnsafeMutableRawPointer?, matchContext: Bool
    ) {
        guard _observationRegistry?.remove(observer: observer, keyPath: keyPath, context: context, matchContext: matchContext) == true
        else {
            Misuse.fail("cannot remove observer \(observer) for key path \"\(keyPath)\" from \(self): it is not registered as an observer")
        }
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

    /// Registers a change handler; used by `observe(_:options:changeHandler:)`.
    final func _observe(
        keys: [String], options: NSKeyValueObservingOptions,
        handler: @escaping (NSObject, [NSKeyValueChangeKey: Any]) -> Void
    ) -> NSKeyValueObservation {
        let registry = _makeRegistry()
        let entries = keys.map { key in
            registry.add(observer: nil, keyPath: key, options: options, context: nil, handler: handler)
        }
        let observation = NSKeyValueObservation(registry: registry, ids: entries.map(\.id))
        if options.contains(.initial) {
            for entry in entries { registry.deliverInitial(entry, object: self) }
        }
        return observation
    }
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
